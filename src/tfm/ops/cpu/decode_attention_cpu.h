// Attention of one new query per row over cached keys/values: the shape of every decoding step
// (T = 1). The general kernel (attention_cpu.h) tiles queries and keys for long sequences; with
// one query row per (batch, head) its tiling, scratch and online rescaling cost more than the
// maths, so this one computes the S scores, one softmax and one weighted sum of values directly.
#pragma once

#include <cstdint>

#include "tfm/ops/kernel_args.h"

namespace tfm::cpu {

using kernels::DecodeAttentionArgs;

// Each batch row is computed by one thread start to finish, so results do not depend on the
// thread count; outside a parallel region the rows are spread over the threads.
void decode_attention_forward(const DecodeAttentionArgs& a);

}  // namespace tfm::cpu
