// The CPU Adam/AdamW update of one contiguous run of parameters (ops/optimizer.h steps the whole
// parameter arena through it), with the arithmetic of kernels::AdamUpdate (ops/kernel_args.h):
// four explicit fused multiply-adds, every other operation rounded on its own. Those four fusions
// are what GCC made of the plain expressions the update was first written in, so written out they
// keep its bits and no longer depend on what the compiler chooses to contract.
#pragma once

#include <cstdint>

#include "tfm/ops/kernel_args.h"

namespace tfm::cpu {

using kernels::AdamUpdate;

// Updates p, m, v (n elements each) in place from the gradient g, on the calling thread: eight
// elements at a time with AVX2 (sqrt and division are IEEE-exact, so the vector and the scalar
// tail give the same bits), the rest one by one.
void adam_update(const AdamUpdate& a, int64_t n, float* p, const float* g, float* m, float* v);

}  // namespace tfm::cpu
