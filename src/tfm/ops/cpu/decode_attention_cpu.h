// Attention of one new query per row over cached keys/values: the shape of every decoding step
// (T = 1). The general kernel (attention_cpu.h) tiles queries and keys for long sequences; with
// one query row per (batch, head) its tiling, scratch and online rescaling cost more than the
// maths, so this one computes the S scores, one softmax and one weighted sum of values directly.
#pragma once

#include <cstdint>

namespace tfm::cpu {

struct DecodeAttentionArgs {
  int64_t batch = 0, heads = 0, kv_len = 0, head_dim = 0;  // B, H, S, Dh
  const float* q = nullptr;                                // (B, H·Dh) contiguous
  const float* k = nullptr;     // (B, S, H·Dh): row b at k + b·kv_batch_stride, rows H·Dh apart
  const float* v = nullptr;     // as k
  int64_t kv_batch_stride = 0;  // >= S·H·Dh
  const uint8_t* mask = nullptr;  // (B, S), nonzero = ignore; null = none
  float scale = 1.f;
  float* out = nullptr;  // (B, H·Dh); a row that sees no key gets zeros
  // (B, H, S): the probabilities, when not null (zeros where a row sees no key). The output is
  // bitwise the same either way: they are only copied out of the softmax the sum uses.
  float* probs = nullptr;
};

// Each batch row is computed by one thread start to finish, so results do not depend on the
// thread count; outside a parallel region the rows are spread over the threads.
void decode_attention_forward(const DecodeAttentionArgs& a);

}  // namespace tfm::cpu
