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

// Mixed-precision training: x (M, K) and w (N, K) as bf16 bit patterns, y f32. y = act(x·wᵀ + b)
// with one bf16 oneDNN matmul, products accumulated in f32, bias and act in its epilogue.
void linear_forward_bf16(int64_t m, int64_t n, int64_t k, const uint16_t* x, const uint16_t* w,
                         const float* bias, Activation act, float* y);
// Its backward from dz f32 (M, N): dz is rounded to bf16 once for both GEMMs, dx (M, K) = dz·w
// and dw (N, K) = dzᵀ·x in bf16 with f32 accumulation; db (N) = column sums of the f32 dz.
void linear_backward_bf16(int64_t m, int64_t n, int64_t k, const float* dz, const uint16_t* x,
                          const uint16_t* w, float* dx, float* dw, float* db);

// out (N) = Σ_i a (M, N)[i, :]. Threads split the columns; each column is summed over rows in
// order (in double for f32), so the result does not depend on the thread count.
template <typename T>
void column_sums(int64_t m, int64_t n, const T* a, T* out);

}  // namespace tfm::cpu
