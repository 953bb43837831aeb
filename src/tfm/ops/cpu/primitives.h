// The one home of GEMM on the CPU. Row-major throughout: op(A) is M×K, op(B) is K×N, C is M×N.
// f32 goes to oneDNN; f64 (reference and gradient checks) to a plain blocked loop (gemm_cpu.cpp).
// The cached oneDNN matmul primitives and their packed weights are matmul_primitive_cpu.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "tfm/types.h"

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

// y (M, N) = post(x (M, K) · wᵀ + bias) with one oneDNN matmul primitive: w is (N, K) row-major
// (nn.Linear's layout) and read transposed through its strides, bias (N) may be null, and bias
// and post-op run in the GEMM's epilogue instead of as extra passes over y. Contiguous operands.
// Creating a primitive costs far more than a small GEMM, so primitives are cached, keyed by
// (M, N, K, bias, post, thread count), in a bounded least-recently-used cache shared by all
// threads.
void matmul_primitive_f32(int64_t m, int64_t n, int64_t k, const float* x, const float* w,
                          const float* bias, Activation post, float* y);

// c (M, N) = post(op(a) · op(b) + bias) with bf16 operands, f32 accumulation and an f32 result:
// the GEMMs of mixed-precision training (linear_cpu.h). a is (M, K) row-major, or (K, M) when
// trans_a; b is (K, N), or (N, K) when trans_b (nn.Linear's weight); both contiguous, as bf16 bit
// patterns (the upper half of an f32's). bias (N) may be null. Same cache as the f32 primitive.
// Below AVX512-BF16 (core/cpu_isa.h) the operands are widened to f32 (exact) and multiplied by
// the f32 primitive: the same function, summed in another order, and no faster than fp32.
void matmul_primitive_bf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                           const uint16_t* a, const uint16_t* b, const float* bias, Activation post,
                           float* c);

// Weights in the layout oneDNN's matmul picks for them (format any): s8 for the u8 × s8 → s32
// matmul, bf16 for the bf16 one. Packed once in the layout the one-row matmul picks, which on
// most CPUs every M picks; where a matmul wants another (AMX blocks weights differently for many
// rows), the weights are reordered into that layout once, at its first call, and the copy is
// kept in `other_layouts` for the later ones.
struct OnednnWeights {
  int64_t n = 0, k = 0;
  std::shared_ptr<void> data;        // opaque blocked weights
  std::shared_ptr<const void> desc;  // their oneDNN memory descriptor
  size_t bytes = 0;
  std::shared_ptr<void> other_layouts;  // copies in the layouts other M's matmuls want
};
// Weights already laid out as `desc` (a dnnl::memory::desc): the relayout path above, which
// only AMX CPUs reach with the pack_* functions' own layouts, tested on any CPU.
OnednnWeights onednn_weights_as_laid_out(int64_t n, int64_t k, std::shared_ptr<void> data,
                                         std::shared_ptr<const void> desc);
// int8: only for CPUs with VNNI (core/cpu_isa.h), whose vpdpbusd sums products exactly;
// oneDNN's path without it adds pairs into 16 bits with saturation (packed_int8_cpu.h is tfm's
// kernel for those CPUs). q (N, K) s8 row-major, as nn.Linear's weight.
OnednnWeights pack_s8_matmul_weights(int64_t n, int64_t k, const int8_t* q);
// acc (M, N) = x (M, K) · qᵀ in s32. Same cache as the other primitives.
void matmul_primitive_u8s8(int64_t m, const uint8_t* x, const OnednnWeights& w, int32_t* acc);
// bf16: only for CPUs with AVX512-BF16 (cpu_has_bf16_dot). w (N, K) bf16 row-major.
OnednnWeights pack_bf16_matmul_weights(int64_t n, int64_t k, const uint16_t* w);
// y (M, N) = post(x (M, K) · wᵀ + bias), x bf16, f32 accumulation and result; bias (N) may be
// null. oneDNN's blocked kernel sums in its own order (not tfm's panels'), the same for every M.
void matmul_primitive_bf16_packed(int64_t m, const uint16_t* x, const OnednnWeights& w,
                                  const float* bias, Activation post, float* y);

struct PrimitiveCacheStats {
  size_t entries = 0;
  size_t capacity = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
};
PrimitiveCacheStats matmul_primitive_cache_stats();
void clear_matmul_primitive_cache();
// Default 256. Shrinking evicts the least recently used primitives at once.
void set_matmul_primitive_cache_capacity(size_t capacity);

}  // namespace tfm::cpu
