// int8 inference GEMM for linear layers on CPUs without VNNI (below avx512_vnni, core/cpu_isa.h),
// over weights quantised and packed once. There oneDNN's u8 × s8 kernels add pairs of products
// into 16 bits with saturation (vpmaddubsw: 255 · 127 · 2 > 32767), which broke tfm's documented
// error bound; this kernel widens both operands to 16 bits and adds pairs of products into 32 bits
// (vpmaddwd), so every sum over k is exact, as VNNI's vpdpbusd makes it. Same panels and walk as
// the f32 and bf16 kernels (packed_panels_cpu.h), at every row count.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tfm/ops/cpu/primitives.h"

namespace tfm::cpu {

// w (N, K) quantised symmetrically per output channel (q = round(w / scale), scale = max|w[n, :]|
// / 127, an all-zero row gets scale 1) and stored as ceil(N / 48) panels of (ceil(K / 2), 48)
// s8 pairs: pair [p][q][j] holds (q[48p + j][2q], q[48p + j][2q + 1]) in its (low, high) bytes.
// Zero past N and, for odd K, in the high byte of the last pair.
struct PackedInt8 {
  int64_t n = 0, k = 0;
  std::shared_ptr<uint16_t> data;  // panels · ceil(K / 2) · 48 s8 pairs
  size_t bytes = 0;
};

// Quantises w (N, K) per output channel into q (N, K) s8 with scales (N) and Σ_k q[n, k] (N), the
// column sums that undo the activations' zero points. Throws on inf or NaN, naming the row.
void quantize_weights_s8(int64_t n, int64_t k, const float* w, int8_t* q, float* scales,
                         int32_t* sums);

// Packs q (N, K) s8, as quantize_weights_s8 made it.
PackedInt8 pack_int8(int64_t n, int64_t k, const int8_t* q);

// out (M, K) = rows ids[0..M) of the quantised weight, dequantised: q[id, k] · scales[id] (f32),
// gathered from the panels. Ids are trusted (in [0, N)). For a tied embedding table whose lookups
// read the int8 output projection (CTranslate2's int8 embeddings are the same q · scale).
void packed_int8_rows(int64_t m, const int32_t* ids, const PackedInt8& w, const float* scales,
                      float* out);

// y (M, N) = post(sx[i] · sw[j] · (Σ_k qx[i, k] · qw[j, k] − zx[i] · sums[j]) + bias[j]), with x
// quantised per row as quantize_rows_u8 does (lowp_matmul_cpu.h) and s32 sums that are exact:
// the same function as the oneDNN int8 path on a VNNI CPU. bias (N) may be null.
void packed_int8_linear_forward(int64_t m, const float* x, const PackedInt8& w, const float* scales,
                                const int32_t* sums, const float* bias, Activation post, float* y);

}  // namespace tfm::cpu
