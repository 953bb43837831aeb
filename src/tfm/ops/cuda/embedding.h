// CUDA kernels for embedding lookup: the device counterparts of ops/cpu/embedding_cpu.h, same
// semantics. Pointers are device memory; work is queued on `stream`.
#pragma once

#include <cstdint>

#include "tfm/core/cuda/runtime.h"

namespace tfm::cuda {

// out[i, :] = weight[ids[i], :] for weight (V, C). An id outside [0, V) gives a zero row and is
// recorded as a device fault (core/cuda/device_fault.h), thrown at the next copy to the host.
void embedding_forward(int64_t n, const int32_t* ids, int64_t v, int64_t c, const float* weight,
                       float* out, const Stream& stream = default_stream());

// grad_weight[r, :] = Σ grad_out[i, :] over positions i with ids[i] == r, added in increasing i
// (the CPU's order, so f32 results are the same bits); rows never looked up and the padding row
// (padding_idx >= 0) are zero. No atomics: the ids are bucketed by a counting sort on the host
// (they are copied back, which waits for the stream), then one thread per (row, column) sums.
// Throws if an id lies outside [0, V).
void embedding_backward(int64_t n, const int32_t* ids, int64_t v, int64_t c, int64_t padding_idx,
                        const float* grad_out, float* grad_weight,
                        const Stream& stream = default_stream());

}  // namespace tfm::cuda
