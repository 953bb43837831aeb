#include "tfm/ops/cpu/packed_bf16_cpu.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "tfm/core/allocator.h"
#include "tfm/core/check.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/cpu/packed_panels_cpu.h"

// GCC 12 warns about the deliberately undefined registers inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tfm::cpu {

namespace {

using panels::kNR;
static_assert(kNR == kPackedBf16Panel);

// Row i of x (M, K) f32 -> row i of out (M, kp) bf16, kp = K rounded up to even, zero-padded: the
// 32-bit word q of a row is then the pair (x[2q], x[2q + 1]) that one vdpbf16ps lane takes.
void convert_rows(int64_t m, int64_t k, const float* x, uint16_t* out) {
  const int64_t kp = (k + 1) & ~int64_t{1};
  for (int64_t i = 0; i < m; ++i) {
    const float* row = x + i * k;
    uint16_t* o = out + i * kp;
    int64_t j = 0;
#ifdef __AVX512BF16__
    // The instruction rounds to nearest even as to_bf16 does, except that it flushes subnormals
    // to zero — which vdpbf16ps does to its operands anyway.
    for (; j < kp; j += 16) {
      const int64_t left = std::min<int64_t>(16, k - j);
      const __mmask16 in = left > 0 ? static_cast<__mmask16>((uint32_t{1} << left) - 1u) : 0;
      const __mmask16 outm =
          static_cast<__mmask16>((uint32_t{1} << std::min<int64_t>(16, kp - j)) - 1u);
      const __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(in, row + j));
      _mm256_mask_storeu_epi16(o + j, outm, reinterpret_cast<const __m256i&>(v));
    }
#endif
    for (; j < k; ++j) o[j] = to_bf16(row[j]);
    if (j < kp) o[j] = 0;
  }
}

struct Bf16Kernel {
  using Word = uint32_t;  // a k pair of bf16 values

#ifdef __AVX512BF16__
  // k pairs (9 KiB) ahead that the first row tile of a panel prefetches its weights. BM_decode
  // bf16, 1 thread, medians of 3 (small / base): 24 pairs 47.0 / 327 ms, 48 46.2 / 325, 96
  // 48.1 / 336, 192 47.8 / 329 — flat within the noise; 48 it is.
  static constexpr int64_t kPrefetch = 48;

  // One register tile: MR rows × NV of the panel's three column vectors, one vdpbf16ps (two
  // multiply-adds a lane) per row and vector and k pair. NV < 3 for the last panel of a weight
  // whose N is not a multiple of 48.
  template <int MR, int NV, int Prefetch>
  static void tile_bf16(int64_t pairs, const uint32_t* x, int64_t ldx, const uint32_t* panel,
                        const float* bias, GemmPostOp post, int64_t cols, float* y, int64_t ldy) {
    __m512 acc[MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
      for (int c = 0; c < NV; ++c) acc[r][c] = _mm512_setzero_ps();
    for (int64_t q = 0; q < pairs; ++q) {
      const uint32_t* wp = panel + q * kNR;
      panels::prefetch_step<NV, Prefetch>(wp, pairs, kPrefetch);
      __m512bh w[NV];
#pragma GCC unroll 3
      for (int c = 0; c < NV; ++c) w[c] = (__m512bh)_mm512_loadu_si512(wp + 16 * c);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const __m512bh xv = (__m512bh)_mm512_set1_epi32(static_cast<int>(x[r * ldx + q]));
#pragma GCC unroll 3
        for (int c = 0; c < NV; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], w[c], xv);
      }
    }
    panels::store_tile<MR, NV>(acc, bias, post, cols, y, ldy);
  }
#endif

  // Without AVX512-BF16: the same products (exact in f32) added in the same order as the
  // instruction, odd k of a pair first; the values differ only where vdpbf16ps flushes
  // subnormals.
  template <int MR>
  static void tile_portable(int64_t pairs, const uint32_t* x, int64_t ldx, const uint32_t* panel,
                            const float* bias, GemmPostOp post, int64_t cols, float* y,
                            int64_t ldy) {
    float acc[MR][kNR] = {};
    for (int64_t q = 0; q < pairs; ++q) {
      const uint32_t* wp = panel + q * kNR;
      for (int r = 0; r < MR; ++r) {
        const uint32_t xw = x[r * ldx + q];
        const float x0 = bf16_to_float(static_cast<uint16_t>(xw)), x1 = bf16_to_float(xw >> 16);
        for (int64_t j = 0; j < kNR; ++j) {
          const float w0 = bf16_to_float(static_cast<uint16_t>(wp[j])),
                      w1 = bf16_to_float(wp[j] >> 16);
          acc[r][j] += x1 * w1;
          acc[r][j] += x0 * w0;
        }
      }
    }
    panels::store_tile_portable<MR>(acc, bias, post, cols, y, ldy);
  }

  template <int MR, int NV, int Prefetch>
  static void tile(int64_t pairs, const uint32_t* x, int64_t ldx, const uint32_t* panel,
                   const float* bias, GemmPostOp post, int64_t cols, float* y, int64_t ldy) {
#ifdef __AVX512BF16__
    tile_bf16<MR, NV, Prefetch>(pairs, x, ldx, panel, bias, post, cols, y, ldy);
#else
    tile_portable<MR>(pairs, x, ldx, panel, bias, post, cols, y, ldy);
#endif
  }
};

}  // namespace

PackedBf16 pack_bf16(int64_t n, int64_t k, const float* w) {
  TFM_CHECK(n > 0 && k > 0) << "pack_bf16: empty weight (" << n << ", " << k << ")";
  PackedBf16 packed;
  packed.n = n;
  packed.k = k;
  const int64_t panels = (n + kNR - 1) / kNR, pairs = (k + 1) / 2;
  packed.bytes = static_cast<size_t>(panels * pairs * kNR) * sizeof(uint32_t);
  packed.data = std::static_pointer_cast<uint32_t>(cpu_allocator().allocate(packed.bytes));
  uint32_t* out = packed.data.get();
  parallel_for(panels, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      uint32_t* panel = out + p * pairs * kNR;
      const int64_t j0 = p * kNR, cols = std::min(kNR, n - j0);
      std::memset(panel, 0, static_cast<size_t>(pairs * kNR) * sizeof(uint32_t));
      for (int64_t j = 0; j < cols; ++j) {
        const float* row = w + (j0 + j) * k;
        for (int64_t q = 0; q < pairs; ++q) {
          const uint32_t lo = to_bf16(row[2 * q]);
          const uint32_t hi = 2 * q + 1 < k ? to_bf16(row[2 * q + 1]) : 0u;
          panel[q * kNR + j] = lo | (hi << 16);
        }
      }
    }
  });
  return packed;
}

void packed_bf16_linear_forward(int64_t m, const float* x, const PackedBf16& w, const float* bias,
                                GemmPostOp post, float* y) {
  TFM_CHECK(m >= 0) << "packed_bf16_linear_forward: negative row count " << m;
  if (m == 0) return;
  TFM_CHECK(w.data != nullptr) << "packed_bf16_linear_forward: weights not packed";
  const int64_t k = w.k, pairs = (k + 1) / 2;
  // Grows to the largest call a thread has made and stays: no allocation in steady state.
  thread_local std::vector<uint32_t> scratch;
  if (scratch.size() < static_cast<size_t>(m * pairs)) scratch.resize(m * pairs);
  convert_rows(m, k, x, reinterpret_cast<uint16_t*>(scratch.data()));
  panels::run_all_panels<Bf16Kernel>(m, w.n, k, pairs, scratch.data(), pairs, w.data.get(), bias,
                                     post, y);
}

}  // namespace tfm::cpu
