// CPU kernels for softmax and log-softmax over the last axis of an (N, C) row-major block.
#pragma once

#include <cstdint>

#include "tfm/ops/cpu/simd_exp.h"

namespace tfm::cpu {

template <typename T>
void softmax_forward(int64_t n, int64_t c, const T* x, T* y);
// dx = y * (dy - Σ_c dy * y)
template <typename T>
void softmax_backward(int64_t n, int64_t c, const T* dy, const T* y, T* dx);

// y = (x - max) - log Σ exp(x - max): the subtraction of the (exact) max first keeps the
// result accurate for large logits.
template <typename T>
void log_softmax_forward(int64_t n, int64_t c, const T* x, T* y);
// One row of log_softmax_forward (the same arithmetic, so the same bits), on the calling thread.
template <typename T>
void log_softmax_row(int64_t c, const T* x, T* y);
// dx = dy - exp(y) * Σ_c dy
template <typename T>
void log_softmax_backward(int64_t n, int64_t c, const T* dy, const T* y, T* dx);

}  // namespace tfm::cpu
