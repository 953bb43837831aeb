// CUDA inverted dropout with the CPU's random numbers: element i is kept iff
// RandomStream(seed, stream_id).uniform(i) >= p, so for the same (seed, stream id) the mask is
// the CPU's (ops/cpu/dropout_cpu.h) bit for bit, and a run moved between devices keeps its masks.
#pragma once

#include <cstdint>

#include "tfm/core/cuda/runtime.h"
#include "tfm/core/rng.h"

namespace tfm::cuda {

// out[i] = x[i] / (1 - p) when kept, else 0, for i < n. p in [0, 1). Device pointers.
void dropout_apply(int64_t n, const float* x, const RandomStream& rng, double p, float* out,
                   const Stream& stream = default_stream());

}  // namespace tfm::cuda
