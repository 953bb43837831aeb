// CPU kernels for linear layers: y = act(x·wᵀ + b) over M flattened rows, and its backward.
// Row-major, contiguous; w is (N, K) as in nn.Linear (N = out_features, K = in_features).
#pragma once

#include <cstdint>

#include "tfm/ops/activation.h"

namespace tfm::cpu {

// How f32 runs. `automatic` picks the faster one for the shape (benchmarks force either).
//   primitive: one oneDNN matmul primitive with bias and activation fused in its epilogue.
//   sgemm:     dnnl_sgemm, then one pass over y for bias and activation.
// f64 always runs the reference GEMM then the same pass.
enum class LinearPath { automatic, primitive, sgemm };

// y (M, N) = act(x (M, K) · w (N, K)ᵀ + bias (N)); bias may be null.
template <typename T>
void linear_forward(int64_t m, int64_t n, int64_t k, const T* x, const T* w, const T* bias,
                    Activation act, T* y, LinearPath path = LinearPath::automatic);

// From dz (M, N), the gradient at the pre-activation: dx (M, K) = dz·w, dw (N, K) = dzᵀ·x,
// db (N) = column sums of dz. A null output is skipped (its inputs may then be null too).
template <typename T>
void linear_backward(int64_t m, int64_t n, int64_t k, const T* dz, const T* x, const T* w, T* dx,
                     T* dw, T* db);

// out (N) = Σ_i a (M, N)[i, :]. Threads split the columns; each column is summed over rows in
// order (in double for f32), so the result does not depend on the thread count.
template <typename T>
void column_sums(int64_t m, int64_t n, const T* a, T* out);

}  // namespace tfm::cpu
