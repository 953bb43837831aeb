// CPU kernels for fused multi-head scaled-dot-product attention, FlashAttention style: scores
// are computed a tile at a time with an online softmax, so memory stays O(B·T·C + B·H·T) however
// long the sequences are. Only the per-row logsumexp is saved for the backward, which recomputes
// the probabilities tile by tile (FlashAttention-2). Heads are indexed in place: q/k/v/out rows
// have stride H·Dh and head h is the Dh columns starting at h·Dh.
#pragma once

#include <cstdint>

namespace tfm::cpu {

struct AttentionShape {
  int64_t batch = 0;     // B
  int64_t heads = 0;     // H
  int64_t q_len = 0;     // T
  int64_t kv_len = 0;    // S
  int64_t head_dim = 0;  // Dh
  // Elements between batch rows of k and v (forward only); 0 means S·H·Dh (contiguous). A KV
  // cache preallocated to a longer length passes its row stride and is read in place.
  int64_t kv_batch_stride = 0;
};

struct AttentionConfig {
  double scale = 1.0;
  // Query t may see key s only if s <= t + (S - T) (aligned to the end, as with a KV cache).
  bool causal = false;
  const uint8_t* key_padding_mask = nullptr;  // (B, S), nonzero = ignore; null = none
  // Dropout on the probabilities: element (b, h, t, s) is kept iff
  // RandomStream(seed, stream).uniform(((b·H + h)·T + t)·S + s) >= dropout, and kept values are
  // scaled by 1/(1 - dropout). 0 = no dropout.
  double dropout = 0.0;
  uint64_t seed = 0;
  uint64_t stream = 0;
};

// q (B, T, H·Dh), k and v (B, S, H·Dh) -> out (B, T, H·Dh).
// lse (B, H, T): logsumexp of each row's scaled, masked scores, +inf for a row that sees no key
// (its output is zero); may be null when no backward will follow.
// weights (B, H, T, S): the probabilities (after masking, before dropout) when not null.
template <typename T>
void attention_forward(const AttentionShape& shape, const AttentionConfig& config, const T* q,
                       const T* k, const T* v, T* out, T* lse, T* weights);

// Gradients of the forward above given grad_out (B, T, H·Dh) and, when the probabilities were
// returned and something used them, weights and grad_weights (B, H, T, S) (else null).
// grad_q/grad_k/grad_v have the shapes of q/k/v and are fully overwritten. Parallel over (b, h):
// every gradient element is summed by one thread in a fixed order, so results are deterministic
// and independent of the thread count.
template <typename T>
void attention_backward(const AttentionShape& shape, const AttentionConfig& config, const T* q,
                        const T* k, const T* v, const T* out, const T* lse, const T* grad_out,
                        const T* weights, const T* grad_weights, T* grad_q, T* grad_k, T* grad_v);

}  // namespace tfm::cpu
