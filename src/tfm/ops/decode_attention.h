// Attention of one query position per batch row over keys/values (a decoding step), forward
// only: the fast path nn::MultiHeadAttention takes when T = 1 and nothing needs a gradient or
// dropout. Same maths as attention() (ops/attention.h); sums in another order.
#pragma once

#include <cstdint>

#include "tfm/core/tensor.h"

namespace tfm {

// q f32 (B, 1, H·Dh); k, v f32 (B, S, H·Dh), contiguous or rows of a longer KV cache (each batch
// row's S·H·Dh values contiguous); key_padding_mask u8 (B, S) or undefined; scale 0 means
// 1/sqrt(Dh). Returns (B, 1, H·Dh). `weights`, when not null, receives the probabilities f32
// (B, H, 1, S), as attention() returns them; the output is bitwise the same with or without.
// kv_rows, when defined, i32 (B): query row b attends over k/v/mask row kv_rows[b] of Bk rows
// (k, v (Bk, S, H·Dh), the mask (Bk, S)) — the beams of a sentence reading one copy of its
// source's keys, as if the rows had been gathered (bitwise). kv_slots, when defined, i32 (B, S):
// position s of query row b is in k/v row kv_slots[b, s] (the beams of a KV cache reading their
// ancestors' positions in place; ignores kv_rows; no mask), again bitwise the gathered result.
// Records nothing for autograd.
Tensor decode_attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads,
                        const Tensor& key_padding_mask, double scale = 0.0,
                        Tensor* weights = nullptr, const Tensor& kv_rows = Tensor(),
                        const Tensor& kv_slots = Tensor());

}  // namespace tfm
