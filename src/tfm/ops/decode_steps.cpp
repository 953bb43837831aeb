#include "tfm/ops/decode_steps.h"

#include <algorithm>
#include <limits>

#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/decode_steps_cpu.h"
#include "tfm/ops/cpu/softmax_cpu.h"
#include "tfm/ops/dispatch.h"

namespace tfm {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void check_rows(const Tensor& x, const char* op) {
  check_on_cpu(x, op, "x");
  TFM_CHECK(x.dtype() == DType::f32 && x.dim() == 2 && x.is_contiguous())
      << op << ": expected contiguous f32 (R, V), got " << x.describe();
}

// Row r of a (R, V) block under its rule.
void mask_row(float* row, int64_t v, StepRule rule, const SpecialIds& s) {
  switch (rule) {
    case StepRule::keep:
      break;
    case StepRule::eos_only: {
      const float eos = row[s.eos];
      std::fill(row, row + v, kNegInf);
      row[s.eos] = eos;
      break;
    }
    case StepRule::no_eos:
      row[s.eos] = kNegInf;
      [[fallthrough]];
    case StepRule::normal:
      row[s.pad] = kNegInf;
      row[s.bos] = kNegInf;
      break;
  }
}

// The (rows, k) result of a top-k over rows of v values, k checked.
TopK top_k_result(int64_t rows, int64_t v, int64_t k, const char* op) {
  TFM_CHECK(k > 0 && k <= v) << op << ": k = " << k << " outside [1, " << v << "]";
  return TopK{Tensor::empty({rows, k}), Tensor::empty({rows, k}, DType::i32)};
}

void check_rules(const Tensor& x, const std::vector<StepRule>& rules, const SpecialIds& s,
                 const char* op) {
  const int64_t rows = x.size(0), v = x.size(1);
  TFM_CHECK(static_cast<int64_t>(rules.size()) == rows)
      << op << ": " << rules.size() << " rules for " << rows << " rows";
  for (int32_t id : {s.pad, s.bos, s.eos})
    TFM_CHECK(id >= 0 && id < v) << op << ": special id " << id << " outside [0, " << v << ")";
}

}  // namespace

void mask_step_rows(const Tensor& lp, const std::vector<StepRule>& rules, const SpecialIds& s) {
  check_rows(lp, "mask_step_rows");
  check_rules(lp, rules, s, "mask_step_rows");
  const int64_t rows = lp.size(0), v = lp.size(1);
  float* base = lp.data<float>();
  for (int64_t r = 0; r < rows; ++r) mask_row(base + r * v, v, rules[r], s);
}

TopK top_k_log_probs(const Tensor& logits, const std::vector<StepRule>& rules, const SpecialIds& s,
                     int64_t k) {
  check_rows(logits, "top_k_log_probs");
  check_rules(logits, rules, s, "top_k_log_probs");
  const int64_t rows = logits.size(0), v = logits.size(1);
  TopK out = top_k_result(rows, v, k, "top_k_log_probs");
  const float* x = logits.data<float>();
  float* vals = out.values.data<float>();
  int32_t* ids = out.ids.data<int32_t>();
  parallel_for(rows, std::max<int64_t>(1, 16384 / v), [&](int64_t b, int64_t e) {
    thread_local std::vector<float> lp;
    lp.resize(static_cast<size_t>(v));
    for (int64_t r = b; r < e; ++r) {
      cpu::log_softmax_row(v, x + r * v, lp.data());
      mask_row(lp.data(), v, rules[static_cast<size_t>(r)], s);
      cpu::top_k_row(lp.data(), v, k, ids + r * k, vals + r * k);
    }
  });
  return out;
}

TopK top_k_rows(const Tensor& x, int64_t k) {
  check_rows(x, "top_k_rows");
  const int64_t rows = x.size(0), v = x.size(1);
  TopK out = top_k_result(rows, v, k, "top_k_rows");
  const float* p = x.data<float>();
  float* vals = out.values.data<float>();
  int32_t* ids = out.ids.data<int32_t>();
  for (int64_t r = 0; r < rows; ++r) cpu::top_k_row(p + r * v, v, k, ids + r * k, vals + r * k);
  return out;
}

Tensor mean_over_heads(const Tensor& w_in) {
  check_on_cpu(w_in, "mean_over_heads", "w");
  TFM_CHECK(w_in.dtype() == DType::f32 && w_in.dim() == 4 && w_in.size(2) == 1)
      << "mean_over_heads: expected f32 (R, H, 1, S), got " << w_in.describe();
  const Tensor w = w_in.contiguous();
  const int64_t n = w.size(0), H = w.size(1), S = w.size(3);
  Tensor out = Tensor::zeros({n, S});
  const float* p = w.data<float>();
  float* a = out.data<float>();
  // Summed in head order (fixed: no dependence on threads or batching), then divided.
  for (int64_t r = 0; r < n; ++r)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s) a[r * S + s] += p[(r * H + h) * S + s];
  for (int64_t i = 0; i < n * S; ++i) a[i] /= static_cast<float>(H);
  return out;
}

}  // namespace tfm
