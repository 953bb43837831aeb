// CUDA softmax and log-softmax over the last axis of an (N, C) row-major f32 block: the device
// counterparts of ops/cpu/softmax_cpu.h (row sums in double, the max subtracted first).
// Pointers are device memory; work is queued on `stream`.
#pragma once

#include <cstdint>

#include "tfm/core/cuda/runtime.h"

namespace tfm::cuda {

void softmax_forward(int64_t n, int64_t c, const float* x, float* y,
                     const Stream& stream = default_stream());
// dx = y * (dy - Σ_c dy * y)
void softmax_backward(int64_t n, int64_t c, const float* dy, const float* y, float* dx,
                      const Stream& stream = default_stream());
// y = (x - max) - log Σ exp(x - max)
void log_softmax_forward(int64_t n, int64_t c, const float* x, float* y,
                         const Stream& stream = default_stream());
// dx = dy - exp(y) * Σ_c dy
void log_softmax_backward(int64_t n, int64_t c, const float* dy, const float* y, float* dx,
                          const Stream& stream = default_stream());

}  // namespace tfm::cuda
