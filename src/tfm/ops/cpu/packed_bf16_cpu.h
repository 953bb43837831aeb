// bf16 inference GEMM for linear layers over weights rounded and packed once, for the few-row
// products of decoding (16–64 rows a step on one thread). A decode step streams every weight of
// the decoder for a handful of rows, so it is bound by the weights' bytes: bf16 halves them, and
// AVX512-BF16's vdpbf16ps does two multiply-adds per f32 lane per instruction. Same scheme as the
// f32 kernel (packed_f32_cpu.h): 48-column panels, an 8-row × 48-column register tile, every
// output one fixed-order sum over k.
#pragma once

#include <cstdint>
#include <memory>

#include "tfm/core/cpu_isa.h"
#include "tfm/ops/cpu/primitives.h"

namespace tfm::cpu {

// Columns per panel: three AVX-512 vectors of 16 f32 lanes.
inline constexpr int64_t kPackedBf16Panel = 48;

// w (N, K) row-major as in nn.Linear, rounded to bf16 (to nearest even, as float_to_bf16) and
// stored as ceil(N / 48) panels of (ceil(K / 2), 48) 32-bit words: word [p][q][j] holds
// (w[48p + j][2q], w[48p + j][2q + 1]) in its (low, high) halves — the operand layout of
// vdpbf16ps. Zero past N and, for odd K, in the high half of the last pair.
struct PackedBf16 {
  int64_t n = 0, k = 0;
  std::shared_ptr<uint32_t> data;  // panels · ceil(K / 2) · 48 words
  size_t bytes = 0;
};

PackedBf16 pack_bf16(int64_t n, int64_t k, const float* w);

// y (M, N) = post(bf16(x) (M, K) · wᵀ + bias); bias (N) may be null; x and y contiguous f32.
// x is rounded to bf16 once per call into a per-thread scratch (no allocation once it has grown).
// Products of bf16 values are exact in f32; they are added to one f32 accumulator per output in
// a fixed order (pair by pair over k; within a pair the odd k then the even k, as vdpbf16ps
// does), so a row's result depends neither on M, the other rows nor the thread count. Outside a
// parallel region the panels are split over the threads; inside one it runs on the calling
// thread. Below avx512_bf16 (core/cpu_isa.h) an AVX2 tile adds the same products in the same
// order with fused multiply-adds on the weights widened in registers (it differs from the
// instruction only on subnormals, which vdpbf16ps flushes to zero): bf16's results on any CPU,
// at about the f32 kernel's speed with half its weight bytes. `isa` (at most cpu_isa()) picks the
// tile; tests pass a lower one to compare the levels.
void packed_bf16_linear_forward(int64_t m, const float* x, const PackedBf16& w, const float* bias,
                                Activation post, float* y, CpuIsa isa = cpu_isa());

}  // namespace tfm::cpu
