// GEMM on the device through cuBLASLt, row-major like ops/cpu/primitives.h: op(A) is M×K,
// op(B) is K×N, C is M×N, lda/ldb/ldc are row strides. f32 in, f32 out, f32 accumulation
// (CUBLAS_COMPUTE_32F: no TF32, so results track the CPU to f32 rounding). Operands need only
// 4-byte alignment (views at any element offset work). The algorithm cuBLASLt's heuristic picks
// is cached per (sizes, transposes, leading dimensions, epilogue, operand alignments).
#pragma once

#include <cstdint>

#include "tfm/core/cuda/runtime.h"
#include "tfm/types.h"

namespace tfm::cuda {

// C = alpha * op(A) * op(B) + beta * C; op(X) = Xᵀ when trans_x. Device pointers.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
          const Stream& stream = default_stream());

// y (M, N) = act(x (M, K) · w (N, K)ᵀ + bias (N)), bias nullable: nn.Linear's layout, as
// cpu::linear_forward. Bias and ReLU run in cuBLASLt's epilogue. GELU is the exact erf form, as
// on the CPU; cuBLASLt's GELU epilogue is the tanh approximation, so GELU (and SiLU, and the tanh
// GELU, for one formula on every path) runs as one extra pass over y after a bias epilogue.
void linear_forward(int64_t m, int64_t n, int64_t k, const float* x, const float* w,
                    const float* bias, Activation act, float* y,
                    const Stream& stream = default_stream());

// From dz (M, N), the gradient at the pre-activation: dx (M, K) = dz·w, dw (N, K) = dzᵀ·x,
// db (N) = column sums of dz. A null output is skipped.
void linear_backward(int64_t m, int64_t n, int64_t k, const float* dz, const float* x,
                     const float* w, float* dx, float* dw, float* db,
                     const Stream& stream = default_stream());

// Mixed precision (bf16 training): the same with bf16 operands — the upper halves of f32 bit
// patterns, rounded as cpu::to_bf16 / cuda::float_to_bf16 round — and f32 C, f32 accumulation
// (cuBLASLt's tensor-core path). As cpu::linear_forward_bf16 / linear_backward_bf16: the backward
// rounds dz to bf16 for both GEMMs and sums db from the f32 dz.
void gemm_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta, float* c,
               int64_t ldc, const Stream& stream = default_stream());
void linear_forward_bf16(int64_t m, int64_t n, int64_t k, const uint16_t* x, const uint16_t* w,
                         const float* bias, Activation act, float* y,
                         const Stream& stream = default_stream());
void linear_backward_bf16(int64_t m, int64_t n, int64_t k, const float* dz, const uint16_t* x,
                          const uint16_t* w, float* dx, float* dw, float* db,
                          const Stream& stream = default_stream());

// int8 inference: C (M, N) s32 = A (M, K) s8 · B (N, K)ᵀ s8, exact integer sums, on cuBLASLt's
// IMMA (tensor-core) kernels: the "TN" layout they take. Their requirements are met by the caller
// (ops/cuda/lowp_linear.h pads): K, lda, ldb and ldc multiples of 16, 16-byte aligned pointers.
// False, with nothing queued, when cuBLASLt offers no algorithm for the problem (the caller then
// runs its own kernel).
bool gemm_s8_cublaslt(int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda,
                      const int8_t* b, int64_t ldb, int32_t* c, int64_t ldc,
                      const Stream& stream = default_stream());

// Bytes of device workspace cuBLASLt may use per call (allocated once).
inline constexpr size_t kGemmWorkspaceBytes = size_t{32} << 20;

}  // namespace tfm::cuda
