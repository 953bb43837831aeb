// CPU kernels for fused multi-head scaled-dot-product attention, FlashAttention style: scores
// are computed a tile at a time with an online softmax, so memory stays O(B·T·C + B·H·T) however
// long the sequences are. Only the per-row logsumexp is saved for the backward, which recomputes
// the probabilities tile by tile (FlashAttention-2). Heads are indexed in place: q/k/v/out rows
// have stride H·Dh and head h is the Dh columns starting at h·Dh.
#pragma once

#include <cstdint>

#include "tfm/core/cpu_isa.h"
#include "tfm/ops/kernel_args.h"

namespace tfm::cpu {

using kernels::AttentionConfig;
using kernels::AttentionShape;

// q (B, T, H·Dh), k and v (B, S, H·Dh) -> out (B, T, H·Dh).
// lse (B, H, T): logsumexp of each row's scaled, masked scores, +inf for a row that sees no key
// (its output is zero); may be null when no backward will follow.
// weights (B, H, T, S): the probabilities (after masking, before dropout) when not null.
// f32 runs a copy compiled for this process's level (core/cpu_isa.h: AVX2 or AVX-512), or for
// `isa` (at most that level: the tests compare them); both copies give the same bits. f64 (the
// reference) runs the baseline's.
template <typename T>
void attention_forward(const AttentionShape& shape, const AttentionConfig& config, const T* q,
                       const T* k, const T* v, T* out, T* lse, T* weights, CpuIsa isa = cpu_isa());

// Gradients of the forward above given grad_out (B, T, H·Dh) and, when the probabilities were
// returned and something used them, weights and grad_weights (B, H, T, S) (else null).
// grad_q/grad_k/grad_v have the shapes of q/k/v and are fully overwritten. Parallel over (b, h):
// every gradient element is summed by one thread in a fixed order, so results are deterministic
// and independent of the thread count, and of the level as the forward's.
template <typename T>
void attention_backward(const AttentionShape& shape, const AttentionConfig& config, const T* q,
                        const T* k, const T* v, const T* out, const T* lse, const T* grad_out,
                        const T* weights, const T* grad_weights, T* grad_q, T* grad_k, T* grad_v,
                        CpuIsa isa = cpu_isa());

}  // namespace tfm::cpu
