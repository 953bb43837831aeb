#include "tfm/ops/decode_steps.h"

#include <algorithm>
#include <limits>

#include "tfm/ops/cpu/decode_steps_cpu.h"
#include "tfm/ops/dispatch.h"

namespace tfm {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

void check_rows(const Tensor& x, const char* op) {
  check_on_cpu(x, op, "x");
  TFM_CHECK(x.dtype() == DType::f32 && x.dim() == 2 && x.is_contiguous())
      << op << ": expected contiguous f32 (R, V), got " << x.describe();
}

}  // namespace

void mask_step_rows(const Tensor& lp, const std::vector<StepRule>& rules, const SpecialIds& s) {
  check_rows(lp, "mask_step_rows");
  const int64_t rows = lp.size(0), v = lp.size(1);
  TFM_CHECK(static_cast<int64_t>(rules.size()) == rows)
      << "mask_step_rows: " << rules.size() << " rules for " << rows << " rows";
  for (int32_t id : {s.pad, s.bos, s.eos})
    TFM_CHECK(id >= 0 && id < v) << "mask_step_rows: special id " << id << " outside [0, " << v
                                 << ")";
  float* base = lp.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    float* row = base + r * v;
    switch (rules[r]) {
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
}

TopK top_k_rows(const Tensor& x, int64_t k) {
  check_rows(x, "top_k_rows");
  const int64_t rows = x.size(0), v = x.size(1);
  TFM_CHECK(k > 0 && k <= v) << "top_k_rows: k = " << k << " outside [1, " << v << "]";
  TopK out{Tensor::empty({rows, k}), Tensor::empty({rows, k}, DType::i32)};
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
