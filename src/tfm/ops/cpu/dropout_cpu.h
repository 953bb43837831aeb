// CPU kernel for inverted dropout.
#pragma once

#include <cstdint>

#include "tfm/core/cpu_isa.h"
#include "tfm/core/rng.h"

namespace tfm::cpu {

// out[i] = x[i] / (1 - p) when stream.uniform(i) >= p, else 0, for i < n. The mask is a pure
// function of (stream, i): the forward and the backward (applied to the gradient) rebuild the
// same mask, for any thread count. p in [0, 1). f32 runs a copy compiled for this process's level
// (core/cpu_isa.h), or for `isa` (at most that level); every level gives the same bits.
template <typename T>
void dropout_apply(int64_t n, const T* x, const RandomStream& stream, double p, T* out,
                   CpuIsa isa = cpu_isa());

}  // namespace tfm::cpu
