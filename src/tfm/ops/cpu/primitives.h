// The one home of GEMM on the CPU. Row-major throughout: op(A) is M×K, op(B) is K×N, C is M×N.
// f32 goes to oneDNN; f64 (reference and gradient checks) to a plain blocked loop.
#pragma once

#include <cstdint>

namespace tfm::cpu {

// C = alpha * op(A) * op(B) + beta * C. op(X) = Xᵀ when trans_x. lda/ldb/ldc are row strides.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// `batch` independent GEMMs at fixed strides (in elements) between operands. Small problems run
// one per thread; large ones use all threads inside each GEMM.
template <typename T>
void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                  T alpha, const T* a, int64_t lda, int64_t stride_a, const T* b, int64_t ldb,
                  int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c);

}  // namespace tfm::cpu
