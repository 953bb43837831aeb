// CPU kernels for layer normalisation over the last axis of an (N, C) row-major block.
//
// Row statistics are accumulated and kept in double whatever T is: the f32 kernels then subtract
// the mean as two floats (hi + lo), so rows whose |mean| is large next to their spread still
// normalise to about float precision, and f32 results track the f64 reference to ~1e-7.
#pragma once

#include <cstdint>

namespace tfm::cpu {

// y = (x - mean) * rstd * gamma + beta per row; mean/rstd (N) are saved for the backward.
template <typename T>
void layer_norm_forward(int64_t n, int64_t c, const T* x, const T* gamma, const T* beta, double eps,
                        T* y, double* mean, double* rstd);

// sum = x + residual, then y = layer_norm(sum), reading x and residual once.
template <typename T>
void add_layer_norm_forward(int64_t n, int64_t c, const T* x, const T* residual, const T* gamma,
                            const T* beta, double eps, T* sum, T* y, double* mean, double* rstd);

// Elements of T that layer_norm_backward needs as workspace for the parameter gradients: the
// (chunks, C) column partials of dgamma and of dbeta. The caller provides it so that it comes from
// the caching allocator rather than fresh pages on every call.
int64_t layer_norm_backward_workspace(int64_t n, int64_t c);

// With xhat = (x - mean) * rstd and g = dy * gamma:
//   dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat)) + dx_extra
//   dgamma = Σ_rows dy * xhat, dbeta = Σ_rows dy.
// dx_extra (nullable) is a gradient added into dx: the `sum` output's own gradient in
// add_layer_norm. dx null skips the input gradient; dgamma/dbeta null (both) skip the parameter
// gradients, and then workspace may be null. The column sums are over fixed row chunks added in
// a fixed order, so they are bit-identical for any thread count.
template <typename T>
void layer_norm_backward(int64_t n, int64_t c, const T* dy, const T* x, const double* mean,
                         const double* rstd, const T* gamma, const T* dx_extra, T* dx, T* dgamma,
                         T* dbeta, T* workspace);

}  // namespace tfm::cpu
