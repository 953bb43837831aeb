// Fused multi-head scaled-dot-product attention with autograd:
//   out = softmax(Q_h K_hᵀ · scale + mask) V_h   for every head h, concatenated.
// Memory does not grow as B·H·T·S: the kernel tiles the scores (FlashAttention style) and keeps
// only a per-row logsumexp for the backward, unless the probabilities are asked for.
#pragma once

#include <cstdint>

#include "tfm/core/rng.h"
#include "tfm/core/tensor.h"

namespace tfm {

struct AttentionOptions {
  // Query t of T may attend key s only if s <= t + (S - T): aligned to the end, so T new
  // queries after S - T cached keys (a KV cache) see what they would in the full sequence.
  bool causal = false;
  // Dropout on the attention probabilities, applied whenever > 0 (pass 0 outside training);
  // kept values are scaled by 1/(1 - p). Element (b, h, t, s) is kept iff
  // stream.uniform(((b·H + h)·T + t)·S + s) >= p, so the mask depends only on the stream, not on
  // the thread count, and the backward recomputes it instead of storing it.
  double dropout = 0.0;
  // Source of the dropout stream (default_generator() when null). A call with dropout > 0 takes
  // exactly one next_stream(); a call without takes none.
  Generator* generator = nullptr;
  // Also return the (B, H, T, S) probabilities (after masking, before dropout). They are
  // differentiable. This is the only case that materialises B·H·T·S values.
  bool return_weights = false;
  double scale = 0.0;  // 0 means 1/sqrt(Dh)
};

struct AttentionResult {
  Tensor out;      // (B, T, H·Dh)
  Tensor weights;  // (B, H, T, S), or undefined unless options.return_weights
};

// q (B, T, H·Dh), k (B, S, H·Dh), v (B, S, H·Dh), one dtype (f32 or f64); head h is the Dh
// columns starting at h·Dh of the last axis (PyTorch's view(B, T, H, Dh)), used in place.
// key_padding_mask: u8 (B, S), nonzero = a padded key no query may attend; undefined = none.
//
// A query row that can see no key at all (every key padded, or causal with T > S and t < T - S)
// has no softmax: its output and its probabilities are zero and it passes no gradient, rather
// than the NaN a literal softmax over -inf would give.
AttentionResult attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                          const Tensor& key_padding_mask = Tensor(),
                          const AttentionOptions& options = {});

}  // namespace tfm
