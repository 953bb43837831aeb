// Linear layers for inference in int8 on the device: the CPU's scheme (ops/cpu/lowp_matmul_cpu.h)
// with the same integers. Weights s8 symmetric per output channel (quantised on the host by
// cpu::quantize_weights_s8, so the CPU's values), each row of the input u8 with its own scale and
// zero point, exact s32 sums, one pass that dequantises. cuBLASLt's IMMA kernels take s8 × s8
// only, so the u8 inputs are stored shifted, q − 128, and the shift is undone with the weights'
// column sums: acc_u8 = acc_s8 + 128 · Σ_k w_q, exact. (bf16 inference needs nothing here: it is
// gemm.h's bf16 linear on operands rounded as cpu::to_bf16 rounds.)
#pragma once

#include <cstdint>

#include "tfm/core/cuda/runtime.h"
#include "tfm/types.h"

namespace tfm::cuda {

// The int8 operands are padded with zeros to multiples of this (K, the weight's rows, the
// input's rows; the input's rows to at least kInt8MinRows): IMMA's alignment and size rules.
inline constexpr int64_t kInt8Pad = 16;
inline constexpr int64_t kInt8MinRows = 32;
inline int64_t int8_padded(int64_t x) {
  return (x + kInt8Pad - 1) / kInt8Pad * kInt8Pad;
}
inline int64_t int8_padded_rows(int64_t m) {
  return m < kInt8MinRows ? kInt8MinRows : int8_padded(m);
}

// Which kernel sums the int8 products: cuBLASLt's IMMA where it has an algorithm (else tfm's),
// or one of the two by name (tests compare them; cublaslt is an error where it has none).
enum class Int8Gemm { automatic, cublaslt, simple };

// Row i < m of x (M, K) f32 quantised exactly as cpu::quantize_rows_u8 does it: lo = min(0, row),
// hi = max(0, row), scale = (hi − lo) / 255 (1 for a zero row), zero = round(−lo / scale), u8 =
// clamp(round(x / scale) + zero, 0, 255), rounding half to even; stored as s8 (u8 − 128) in
// q (rows, ldq) with zeros in columns [K, ldq) and in rows [m, rows). scale (m), zero (m) the u8
// zero point. A row holding inf or NaN records a device fault (core/cuda/device_fault.h: thrown
// at the next copy to the host, as the CPU throws at once) and quantises to zeros.
void quantize_rows_s8(int64_t m, int64_t rows, int64_t k, const float* x, int8_t* q, int64_t ldq,
                      float* scale, int32_t* zero, const Stream& stream = default_stream());

// acc (M, ldc) s32 = q (M, K) s8 · w (N, K)ᵀ s8 with lda = ldw = K: tfm's kernel (dp4a), the
// reference for cuBLASLt's. K, ldc multiples of 16.
void gemm_s8_simple(int64_t m, int64_t n, int64_t k, const int8_t* q, const int8_t* w, int32_t* acc,
                    int64_t ldc, const Stream& stream = default_stream());

// y (M, N) = post(sx[i] · sw[j] · (acc_u8[i, j] − zero[i] · sums[j]) + bias[j]): x (M, K) f32;
// w (int8_padded(N), int8_padded(K)) s8, zeros in the padding; w_scales (N) = max|w[j, :]| / 127;
// w_sums (N) = Σ_k w_q[j, k]; bias (N) or null. GELU is the exact erf form (the CPU's is its
// A&S approximation, within 1e-6). Scratch comes from the device allocator.
void linear_forward_int8(int64_t m, int64_t n, int64_t k, const float* x, const int8_t* w,
                         const float* w_scales, const int32_t* w_sums, const float* bias,
                         Activation post, float* y, Int8Gemm path = Int8Gemm::automatic,
                         const Stream& stream = default_stream());

}  // namespace tfm::cuda
