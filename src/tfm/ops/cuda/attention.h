// Fused multi-head scaled-dot-product attention forward on the device, FlashAttention style:
// keys and values pass through shared memory a tile at a time with an online softmax, so no
// (B·H·T·S) score matrix is ever stored. Same layout, masks, dropout stream and lse as
// cpu::attention_forward (ops/cpu/attention_cpu.h): q/k/v/out rows have stride H·Dh and head h is
// the Dh columns from h·Dh. f32, head_dim ≤ 128. The backward recomputes the probabilities tile
// by tile from lse (FlashAttention-2) and needs no atomics: one kernel owns query rows (dq),
// another key rows (dk, dv), so every gradient element is summed by one thread in a fixed order.
#pragma once

#include <cstdint>

#include "tfm/core/cuda/runtime.h"
#include "tfm/ops/kernel_args.h"

namespace tfm::cuda {

using kernels::AttentionConfig;  // key_padding_mask in device memory
using kernels::AttentionShape;   // kv_batch_stride 0 (contiguous k and v) only

inline constexpr int64_t kAttentionMaxHeadDim = 128;

// q (B, T, H·Dh), k and v (B, S, H·Dh) -> out (B, T, H·Dh); lse (B, H, T) nullable: each row's
// logsumexp of scaled, masked scores (+inf for a row that sees no key, whose output is 0).
void attention_forward(const AttentionShape& shape, const AttentionConfig& config, const float* q,
                       const float* k, const float* v, float* out, float* lse,
                       const Stream& stream = default_stream());

// Gradients of the forward above from grad_out (B, T, H·Dh), given its out and lse (not null).
// grad_q/grad_k/grad_v have the shapes of q/k/v and are fully overwritten. Dropout (same config)
// rebuilds the forward's mask.
void attention_backward(const AttentionShape& shape, const AttentionConfig& config, const float* q,
                        const float* k, const float* v, const float* out, const float* lse,
                        const float* grad_out, float* grad_q, float* grad_k, float* grad_v,
                        const Stream& stream = default_stream());

}  // namespace tfm::cuda
