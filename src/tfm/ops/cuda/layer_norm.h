// CUDA kernels for layer normalisation over the last axis of an (N, C) row-major f32 block: the
// device counterparts of ops/cpu/layer_norm_cpu.h with the same arguments and semantics (row
// statistics in double, the mean subtracted as hi + lo floats, mean/rstd saved in double).
// Pointers are device memory; work is queued on `stream`.
#pragma once

#include <cstdint>

#include "tfm/core/cuda/runtime.h"

namespace tfm::cuda {

// y = (x - mean) * rstd * gamma + beta per row; mean/rstd (N) are saved for the backward.
void layer_norm_forward(int64_t n, int64_t c, const float* x, const float* gamma, const float* beta,
                        double eps, float* y, double* mean, double* rstd,
                        const Stream& stream = default_stream());

// sum = x + residual, then y = layer_norm(sum).
void add_layer_norm_forward(int64_t n, int64_t c, const float* x, const float* residual,
                            const float* gamma, const float* beta, double eps, float* sum, float* y,
                            double* mean, double* rstd, const Stream& stream = default_stream());

// dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat)) + dx_extra, g = dy * gamma;
// dgamma = Σ_rows dy * xhat, dbeta = Σ_rows dy. Null dx skips the input gradient; null
// dgamma/dbeta (both) skip the parameter gradients; dx_extra may be null. The column sums go
// through fixed 32-row chunks summed in order, so they are the same bits on every run.
void layer_norm_backward(int64_t n, int64_t c, const float* dy, const float* x, const double* mean,
                         const double* rstd, const float* gamma, const float* dx_extra, float* dx,
                         float* dgamma, float* dbeta, const Stream& stream = default_stream());

}  // namespace tfm::cuda
