// Softmax cross-entropy over a vocabulary, fused (no (N, V) log-probabilities are kept), with
// label smoothing, ignored (padding) targets and the counts training logs need.
#pragma once

#include <cstdint>

#include "tfm/core/tensor.h"

namespace tfm {

struct CrossEntropyResult {
  Tensor loss;          // scalar (shape {}), mean over non-ignored tokens of the label-smoothed
                        // loss; 0 when there are none. Same dtype as the logits.
  int64_t tokens = 0;   // non-ignored targets
  int64_t correct = 0;  // non-ignored targets whose argmax logit is the target (first max wins)
  double nll_sum = 0;   // Σ -log p(target) over non-ignored tokens, unsmoothed (perplexity)
};

// logits (..., V) f32/f64; targets i32 (...) with the logits' leading shape, each in [0, V) or
// equal to ignore_index. Matches PyTorch's nn.CrossEntropyLoss(label_smoothing=s,
// ignore_index=..., reduction='mean'): target distribution (1 - s) onehot + s / V over all V
// classes. Only the logits get a gradient.
CrossEntropyResult softmax_cross_entropy(const Tensor& logits, const Tensor& targets,
                                         double label_smoothing = 0.0, int64_t ignore_index = -100);

}  // namespace tfm
