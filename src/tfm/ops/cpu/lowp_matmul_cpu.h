// Inference GEMMs for linear layers with weights converted and packed once: f32 and bf16 on tfm's
// own panel kernels (packed_f32_cpu.h, packed_bf16_cpu.h); int8 on a oneDNN matmul primitive
// where the CPU has VNNI (core/cpu_isa.h), elsewhere on tfm's exact-sum kernel
// (packed_int8_cpu.h). Row-major, contiguous; w is (N, K) as in nn.Linear; x and y stay f32 at
// the interface.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "tfm/ops/cpu/packed_bf16_cpu.h"
#include "tfm/ops/cpu/packed_f32_cpu.h"
#include "tfm/ops/cpu/packed_int8_cpu.h"
#include "tfm/ops/cpu/primitives.h"

namespace tfm::cpu {

// A weight prepared for its kernel at one compute type: tfm's panels (f32, bf16, and int8 without
// VNNI) or oneDNN's blocked layout (int8 on VNNI CPUs, bf16 for whole sequences on AVX512-BF16
// CPUs); one copy serves every row count.
// int8 also keeps the per output channel scales and the column sums of the quantised weight that
// undo the activations' zero points. One packed copy of the weight, whatever the type.
struct PackedWeights {
  ComputeType kind;
  int64_t n = 0, k = 0;
  size_t bytes = 0;           // of the packed copy
  PackedF32 f32;              // float32
  PackedBf16 bf16;            // bfloat16
  PackedInt8 int8;            // int8 without VNNI
  OnednnWeights onednn;       // int8 with VNNI; bf16 for whole sequences with AVX512-BF16
  std::vector<float> scales;  // int8: (N) max|w[n, :]| / 127
  std::vector<int32_t> sums;  // int8: (N) Σ_k q[n, k]
  // int8 in oneDNN's layout, packed with `lookups`: q (N, K) row-major, for packed_weight_rows
  // (tfm's own int8 panels give the rows back themselves; oneDNN's blocked layout does not). Its
  // bytes are not in `bytes`: a block of its own.
  std::shared_ptr<int8_t> rows_s8;
  size_t rows_bytes = 0;
};

// Converts w f32 (N, K) once for `kind` (float32, bfloat16 or int8). f32 keeps the values and
// only reorders them into panels. bf16 rounds to nearest even; int8 is symmetric per output
// channel (q = round(w / scale), scale = max|w[n, :]| / 127, an all-zero row gets scale 1).
// `sequences`: the layer multiplies whole sequences (an encoder's, cross-attention's keys and
// values), hundreds of rows a call: bf16 then takes oneDNN's blocked layout and kernel where the
// CPU has AVX512-BF16, as fp32 takes oneDNN's GEMM for those layers; the few-row products of
// decoding steps stay on tfm's panels. Still one packed copy of the weight.
// `lookups`: the weight is also a tied embedding table whose rows packed_weight_rows reads (int8
// in oneDNN's layout then keeps q row-major too).
std::shared_ptr<const PackedWeights> pack_weights(ComputeType kind, int64_t n, int64_t k,
                                                  const float* w, bool sequences = false,
                                                  bool lookups = false);

// out (M, K) = the rows ids[0..M) of w as an embedding lookup sees them (ids trusted, in
// [0, N)): fp32, the values pack_weights was given (bitwise); int8, the quantised rows
// dequantised, q · scale (CTranslate2's int8 embeddings). bf16, and int8 in oneDNN's layout
// packed without `lookups`, are errors.
void packed_weight_rows(int64_t m, const int32_t* ids, const PackedWeights& w, float* out);

// y (M, N) = post(x (M, K) · wᵀ + bias), at every row count. f32 on tfm's panels
// (packed_f32_cpu.h). bf16: x is rounded to bf16, products accumulate in f32, on tfm's panels
// (packed_bf16_cpu.h) or, for weights packed for sequences, on oneDNN's kernel (each sums a row in
// its own fixed order, whatever M). int8: each row of x is quantised to u8 with its own scale and
// zero point (min and max of the row, 0 included), u8·s8 products accumulate exactly in s32 (oneDNN
// with VNNI, tfm's kernel without), and one pass dequantises with row × channel scales, adds bias
// and applies the post-op.
void lowp_linear_forward(int64_t m, const float* x, const PackedWeights& w, const float* bias,
                         Activation post, float* y);

// The int8 product on oneDNN's copy (VNNI CPUs), for tests and benchmarks that compare it with
// tfm's kernel. An error where the CPU level made no such copy.
void onednn_int8_linear_forward(int64_t m, const float* x, const PackedWeights& w,
                                const float* bias, Activation post, float* y);

// The conversions, exposed for tests. bf16 values are the upper 16 bits of the f32 pattern.
void float_to_bf16(int64_t n, const float* src, uint16_t* dst);

// One value: round to nearest even; a NaN stays a (quiet) NaN instead of rounding into infinity.
// Inline so that the conversion loops here and in packed_bf16_cpu.cpp vectorise; every bf16
// weight and activation of the library is rounded by this one definition.
inline uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  return std::isnan(f) ? static_cast<uint16_t>((bits >> 16) | 0x40u)
                       : static_cast<uint16_t>(rounded);
}

inline float bf16_to_float(uint16_t v) {
  const uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
// Row i of x (M, K) -> q (M, K) u8, with x ≈ scale[i] * (q - zero[i]).
void quantize_rows_u8(int64_t m, int64_t k, const float* x, uint8_t* q, float* scale,
                      int32_t* zero);

}  // namespace tfm::cpu
