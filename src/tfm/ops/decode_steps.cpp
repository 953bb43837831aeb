#include "tfm/ops/decode_steps.h"

#include <algorithm>
#include <limits>
#include <string>

#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/decode_steps_cpu.h"
#include "tfm/ops/cpu/softmax_cpu.h"
#include "tfm/ops/dispatch.h"
#ifdef TFM_WITH_CUDA
#include "tfm/core/device_copy.h"
#include "tfm/ops/cuda/decode_steps.h"
#include "tfm/ops/softmax.h"
#endif

namespace tfm {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNegInf = -kInf;

void check_rows(const Tensor& x, const char* op) {
  TFM_CHECK(x.defined() && x.dtype() == DType::f32 && x.dim() == 2 && x.is_contiguous())
      << op << ": expected contiguous f32 (R, V), got "
      << (x.defined() ? x.describe() : std::string("an undefined tensor"));
  if (!on_cuda(x)) check_on_cpu(x, op, "x");
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

// The (rows, k) result of a top-k over rows of v values on `device`, k checked.
TopK top_k_result(int64_t rows, int64_t v, int64_t k, const char* op, Device device = Device::cpu) {
  TFM_CHECK(k > 0 && k <= v) << op << ": k = " << k << " outside [1, " << v << "]";
  return TopK{Tensor::empty({rows, k}, DType::f32, device),
              Tensor::empty({rows, k}, DType::i32, device)};
}

#ifdef TFM_WITH_CUDA
// The rules as a u8 tensor on the device (StepRule's values).
Tensor rules_on_device(const std::vector<StepRule>& rules) {
  std::vector<uint8_t> r(rules.size());
  for (size_t i = 0; i < rules.size(); ++i) r[i] = static_cast<uint8_t>(rules[i]);
  return to_device(Tensor::from_vector({static_cast<int64_t>(r.size())}, r), Device::cuda);
}
#endif

void check_rules(const Tensor& x, const std::vector<StepRule>& rules, const SpecialIds& s,
                 const char* op) {
  const int64_t rows = x.size(0), v = x.size(1);
  TFM_CHECK(static_cast<int64_t>(rules.size()) == rows)
      << op << ": " << rules.size() << " rules for " << rows << " rows";
  for (int32_t id : {s.pad, s.bos, s.eos})
    TFM_CHECK(id >= 0 && id < v) << op << ": special id " << id << " outside [0, " << v << ")";
}

// Each row of logits (R, V) f32 on the CPU through row_top_k(in, rule, scratch, ids, vals) on the
// threads, into a (R, k) result; scratch: the thread's buffer of V floats.
template <typename RowTopK>
TopK top_k_each_row(const Tensor& logits, const std::vector<StepRule>& rules, int64_t k,
                    const char* op, RowTopK row_top_k) {
  const int64_t rows = logits.size(0), v = logits.size(1);
  TopK out = top_k_result(rows, v, k, op);
  const float* x = logits.data<float>();
  float* vals = out.values.data<float>();
  int32_t* ids = out.ids.data<int32_t>();
  parallel_for(rows, std::max<int64_t>(1, 16384 / v), [&](int64_t b, int64_t e) {
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<size_t>(v));
    for (int64_t r = b; r < e; ++r)
      row_top_k(x + r * v, rules[static_cast<size_t>(r)], scratch.data(), ids + r * k,
                vals + r * k);
  });
  return out;
}

// The top k of row `in` (v values) masked by `rule`: of its log-probs (log_probs) or of the row
// itself, written to scratch first, so that `in` stays as it is.
void masked_top_k_row(const float* in, int64_t v, StepRule rule, const SpecialIds& s, int64_t k,
                      bool log_probs, float* scratch, int32_t* ids, float* vals) {
  if (log_probs)
    cpu::log_softmax_row(v, in, scratch);
  else
    std::copy(in, in + v, scratch);
  mask_row(scratch, v, rule, s);
  cpu::top_k_row(scratch, v, k, ids, vals);
}

// Row `in`'s top k masked by `rule` without a copy: the raw row's top k + (the tokens the rule
// bans), those dropped; false where that cannot stand for the masked row's (an end-only rule, a
// row too short, a NaN or +inf, or a -inf among the k, whose ties the masked row orders
// otherwise), and the caller ranks a masked copy instead.
bool top_k_unmasked(const float* in, int64_t v, StepRule rule, const SpecialIds& s, int64_t k,
                    int32_t* ids, float* vals) {
  if (rule == StepRule::eos_only) return false;
  const int32_t banned[3] = {s.pad, s.bos, s.eos};
  const int64_t n_banned = rule == StepRule::keep ? 0 : rule == StepRule::normal ? 2 : 3;
  const int64_t wide = k + n_banned;
  if (wide > v) return false;
  thread_local std::vector<int32_t> wi;
  thread_local std::vector<float> wv;
  wi.resize(static_cast<size_t>(wide));
  wv.resize(static_cast<size_t>(wide));
  if (!cpu::top_k_row_finite(in, v, wide, wi.data(), wv.data())) return false;
  int64_t n = 0;
  for (int64_t j = 0; j < wide && n < k; ++j) {
    const auto at = static_cast<size_t>(j);
    if (std::find(banned, banned + n_banned, wi[at]) != banned + n_banned) continue;
    ids[n] = wi[at];
    vals[n++] = wv[at];
  }
  return n == k && vals[k - 1] > kNegInf;
}

}  // namespace

void mask_step_rows(const Tensor& lp, const std::vector<StepRule>& rules, const SpecialIds& s) {
  check_rows(lp, "mask_step_rows");
  check_rules(lp, rules, s, "mask_step_rows");
  const int64_t rows = lp.size(0), v = lp.size(1);
#ifdef TFM_WITH_CUDA
  if (on_cuda(lp)) {
    const Tensor r = rules_on_device(rules);
    cuda::mask_step_rows(rows, v, lp.data<float>(), r.data<uint8_t>(), s.pad, s.bos, s.eos);
    return;
  }
#endif
  float* base = lp.data<float>();
  for (int64_t r = 0; r < rows; ++r) mask_row(base + r * v, v, rules[r], s);
}

TopK top_k_log_probs(const Tensor& logits, const std::vector<StepRule>& rules, const SpecialIds& s,
                     int64_t k) {
  check_rows(logits, "top_k_log_probs");
  check_rules(logits, rules, s, "top_k_log_probs");
  const int64_t v = logits.size(1);
#ifdef TFM_WITH_CUDA
  if (on_cuda(logits)) {
    // Three passes on the device (the log-probs are written once): the fusion that pays on the
    // CPU's caches buys little against a GPU's bandwidth.
    const Tensor lp = log_softmax(logits.detach());
    mask_step_rows(lp, rules, s);
    return top_k_rows(lp, k);
  }
#endif
  return top_k_each_row(
      logits, rules, k, "top_k_log_probs",
      [&](const float* in, StepRule rule, float* scratch, int32_t* ids, float* vals) {
        masked_top_k_row(in, v, rule, s, k, true, scratch, ids, vals);
      });
}

TopK top_k_logits(const Tensor& logits, const std::vector<StepRule>& rules, const SpecialIds& s,
                  int64_t k) {
  check_rows(logits, "top_k_logits");
  check_rules(logits, rules, s, "top_k_logits");
  const int64_t v = logits.size(1);
#ifdef TFM_WITH_CUDA
  // On a GPU the log-softmax's pass is small against its bandwidth: the log-probs' top k, which
  // rank a row alike and show an overflow as NaN too.
  if (on_cuda(logits)) return top_k_log_probs(logits, rules, s, k);
#endif
  return top_k_each_row(
      logits, rules, k, "top_k_logits",
      [&](const float* in, StepRule rule, float* scratch, int32_t* ids, float* vals) {
        if (top_k_unmasked(in, v, rule, s, k, ids, vals)) return;
        // -inf is a processor's ban; NaN and +inf are an overflow. A row that overflowed, or that
        // bans every token, is ranked as top_k_log_probs ranks it (its log-probs are NaN), so the
        // search meets it as a scored one would, and the caller sees a score that is not finite.
        const bool overflow = std::any_of(in, in + v, [](float a) { return !(a < kInf); });
        const bool all_banned = std::none_of(in, in + v, [](float a) { return a > kNegInf; });
        masked_top_k_row(in, v, rule, s, k, overflow || all_banned, scratch, ids, vals);
      });
}

TopK top_k_rows(const Tensor& x, int64_t k) {
  check_rows(x, "top_k_rows");
  const int64_t rows = x.size(0), v = x.size(1);
  TopK out = top_k_result(rows, v, k, "top_k_rows", x.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(x)) {
    cuda::top_k_rows(rows, v, k, x.data<float>(), out.ids.data<int32_t>(),
                     out.values.data<float>());
    return out;
  }
#endif
  const float* p = x.data<float>();
  float* vals = out.values.data<float>();
  int32_t* ids = out.ids.data<int32_t>();
  for (int64_t r = 0; r < rows; ++r) cpu::top_k_row(p + r * v, v, k, ids + r * k, vals + r * k);
  return out;
}

Tensor mean_over_heads(const Tensor& w_in) {
  TFM_CHECK(w_in.defined() && w_in.dtype() == DType::f32 && w_in.dim() == 4 && w_in.size(2) == 1)
      << "mean_over_heads: expected f32 (R, H, 1, S), got "
      << (w_in.defined() ? w_in.describe() : std::string("an undefined tensor"));
  const Tensor w = w_in.contiguous();
  const int64_t n = w.size(0), H = w.size(1), S = w.size(3);
#ifdef TFM_WITH_CUDA
  if (on_cuda(w)) {
    Tensor out = Tensor::empty({n, S}, DType::f32, Device::cuda);
    cuda::mean_over_heads(n, H, S, w.data<float>(), out.data<float>());
    return out;
  }
#endif
  check_on_cpu(w, "mean_over_heads", "w");
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
