// Attention of one new query per row over cached keys/values: the shape of every decoding step
// (T = 1). The general kernel (attention_cpu.h) tiles queries and keys for long sequences; with
// one query row per (batch, head) its tiling, scratch and online rescaling cost more than the
// maths, so this one computes the S scores, one softmax and one weighted sum of values directly.
#pragma once

#include <cstdint>

#include "tfm/core/cpu_isa.h"
#include "tfm/ops/kernel_args.h"

namespace tfm::cpu {

using kernels::DecodeAttentionArgs;

// Each batch row is computed by one thread start to finish, so results do not depend on the
// thread count; outside a parallel region the rows are spread over the threads. The kernel is
// compiled for AVX2 and for AVX-512 and runs this process's level (core/cpu_isa.h), or `isa`
// (at most that level: the tests compare the levels); both give the same bits.
void decode_attention_forward(const DecodeAttentionArgs& a);
void decode_attention_forward(const DecodeAttentionArgs& a, CpuIsa isa);

}  // namespace tfm::cpu
