// The vocabulary-wide steps of a search, on the log-probs' device: the conventions' masks and
// the k best tokens of each row. Their small results reach the host through to_host (host.h).
#pragma once

#include <cstdint>
#include <vector>

#include "tfm/core/tensor.h"

namespace tfm {

// What a row may emit at this step.
enum class StepRule : uint8_t {
  keep,      // untouched (a step forced by a target prefix)
  normal,    // not PAD or BOS
  no_eos,    // not PAD, BOS or EOS (before min_length)
  eos_only,  // EOS alone (the last position)
};

struct SpecialIds {
  int32_t pad = 0, bos = 1, eos = 2;
};

// Sets to -inf, in place, what each row's rule forbids in log-probs lp (R, V) f32 contiguous.
void mask_step_rows(const Tensor& lp, const std::vector<StepRule>& rules, const SpecialIds& ids);

struct TopK {
  Tensor values;  // (R, k) f32
  Tensor ids;     // (R, k) i32
};

// The k best entries of each row of x (R, V) f32, best first, equal values lower id first
// (0 < k <= V).
TopK top_k_rows(const Tensor& x, int64_t k);

// top_k_rows of log_softmax(logits) masked by mask_step_rows, bitwise, without writing the
// (R, V) log-probs: each row is normalised, masked and scanned while it sits in cache. A search
// step's log-softmax and top-k over the vocabulary were two passes more over memory.
TopK top_k_log_probs(const Tensor& logits, const std::vector<StepRule>& rules,
                     const SpecialIds& ids, int64_t k);

// top_k_rows of the logits (R, V) themselves masked by mask_step_rows, the logits unchanged: a
// greedy step that returns no scores ranks them without a log-softmax (the order within a row is
// the same; values are logits, not log-probabilities), as CTranslate2 does without return_scores.
// A row holding a NaN or +inf logit, or only -inf, is ranked as top_k_log_probs ranks it (its
// log-probs are NaN).
// On CUDA: top_k_log_probs (a row ranked alike; the pass saved is small against its bandwidth).
TopK top_k_logits(const Tensor& logits, const std::vector<StepRule>& rules, const SpecialIds& ids,
                  int64_t k);

// w (R, H, 1, S) f32 averaged over heads, summed in head order then divided by H: (R, S) f32.
Tensor mean_over_heads(const Tensor& w);

}  // namespace tfm
