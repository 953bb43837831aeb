#include "tfm/ops/cpu/packed_bf16_cpu.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "tfm/core/allocator.h"
#include "tfm/core/check.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/activation_cpu.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"

// GCC 12 warns about the deliberately undefined registers inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tfm::cpu {

namespace {

constexpr int64_t kNR = kPackedBf16Panel;
// Rows per register tile: 8 rows × 3 vectors = 24 accumulators, plus the 3 weight vectors and a
// broadcast, of the 32 zmm registers.
constexpr int64_t kMR = 8;

// What a tile prefetches: nothing, its own panel ahead (the first row tile of a panel), or the
// next panel (the second row tile: it computes from cache, so the memory bus is free).
constexpr int kNoPrefetch = 0, kOwnPanel = 1, kNextPanel = 2;

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

#ifdef __AVX512BF16__
// k pairs (9 KiB) ahead that the first row tile of a panel prefetches its weights. BM_decode
// bf16, 1 thread, medians of 3 (small / base): 24 pairs 47.0 / 327 ms, 48 46.2 / 325, 96
// 48.1 / 336, 192 47.8 / 329 — flat within the noise; 48 it is.
constexpr int64_t kPrefetch = 48;

// One register tile: MR rows × NV of the panel's three column vectors, then acc + bias and the
// post-op (ReLU in registers; GELU by the shared serial routine afterwards) stored to the `cols`
// valid columns. NV < 3 for the last panel of a weight whose N is not a multiple of 48.
template <int MR, int NV, int Prefetch>
void tile_bf16(int64_t pairs, const uint32_t* x, int64_t ldx, const uint32_t* panel,
               const float* bias, GemmPostOp post, int64_t cols, float* y, int64_t ldy) {
  __m512 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
    for (int c = 0; c < NV; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t q = 0; q < pairs; ++q) {
    const uint32_t* wp = panel + q * kNR;
    if constexpr (Prefetch == kOwnPanel) {
      // Past the panel's end this reaches into the next panel (or harmlessly past the buffer).
      const char* ahead = reinterpret_cast<const char*>(wp + kPrefetch * kNR);
#pragma GCC unroll 3
      for (int c = 0; c < NV; ++c) _mm_prefetch(ahead + 64 * c, _MM_HINT_T0);
    } else if constexpr (Prefetch == kNextPanel) {
      // The same pair of the next panel, into L2: its first tile then computes from cache.
      const char* next = reinterpret_cast<const char*>(wp + pairs * kNR);
      _mm_prefetch(next, _MM_HINT_T1);
      _mm_prefetch(next + 64, _MM_HINT_T1);
      _mm_prefetch(next + 128, _MM_HINT_T1);
    }
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
  __mmask16 mask[NV];
  __m512 b[NV];
  for (int c = 0; c < NV; ++c) {
    const int64_t left = std::clamp<int64_t>(cols - 16 * c, 0, 16);
    mask[c] = static_cast<__mmask16>((uint32_t{1} << left) - 1u);
    b[c] = bias != nullptr ? _mm512_maskz_loadu_ps(mask[c], bias + 16 * c) : _mm512_setzero_ps();
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
    for (int c = 0; c < NV; ++c) {
      __m512 v = _mm512_add_ps(acc[r][c], b[c]);
      if (post == GemmPostOp::relu) v = _mm512_max_ps(v, _mm512_setzero_ps());
      _mm512_mask_storeu_ps(y + r * ldy + 16 * c, mask[c], v);
    }
  }
}
#endif

// Without AVX512-BF16: the same products (exact in f32) added in the same order as the
// instruction, odd k of a pair first; the values differ only where vdpbf16ps flushes subnormals.
template <int MR>
void tile_portable(int64_t pairs, const uint32_t* x, int64_t ldx, const uint32_t* panel,
                   const float* bias, GemmPostOp post, int64_t cols, float* y, int64_t ldy) {
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
  for (int r = 0; r < MR; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      const float v = acc[r][j] + (bias != nullptr ? bias[j] : 0.f);
      y[r * ldy + j] = post == GemmPostOp::relu ? std::max(v, 0.f) : v;
    }
}

template <int MR, int NV, int Prefetch>
void tile(int64_t pairs, const uint32_t* x, int64_t ldx, const uint32_t* panel, const float* bias,
          GemmPostOp post, int64_t cols, float* y, int64_t ldy) {
#ifdef __AVX512BF16__
  tile_bf16<MR, NV, Prefetch>(pairs, x, ldx, panel, bias, post, cols, y, ldy);
#else
  tile_portable<MR>(pairs, x, ldx, panel, bias, post, cols, y, ldy);
#endif
}

using TileFn = void (*)(int64_t, const uint32_t*, int64_t, const uint32_t*, const float*,
                        GemmPostOp, int64_t, float*, int64_t);

template <int NV, int Prefetch>
constexpr std::array<TileFn, kMR + 1> tiles_of() {
  return {nullptr,
          tile<1, NV, Prefetch>,
          tile<2, NV, Prefetch>,
          tile<3, NV, Prefetch>,
          tile<4, NV, Prefetch>,
          tile<5, NV, Prefetch>,
          tile<6, NV, Prefetch>,
          tile<7, NV, Prefetch>,
          tile<8, NV, Prefetch>};
}
// [prefetch][vectors - 1][rows].
constexpr std::array<TileFn, kMR + 1> kTiles[3][3] = {
    {tiles_of<1, kNoPrefetch>(), tiles_of<2, kNoPrefetch>(), tiles_of<3, kNoPrefetch>()},
    {tiles_of<1, kOwnPanel>(), tiles_of<2, kOwnPanel>(), tiles_of<3, kOwnPanel>()},
    {tiles_of<1, kNextPanel>(), tiles_of<2, kNextPanel>(), tiles_of<3, kNextPanel>()}};

// Panels [p0, p1) for every row; xb is x in bf16 pairs, `ldx` words a row.
void run_panels(int64_t m, const uint32_t* xb, int64_t ldx, const PackedBf16& w, const float* bias,
                GemmPostOp post, float* y, int64_t p0, int64_t p1) {
  const int64_t n = w.n, pairs = (w.k + 1) / 2;
  for (int64_t p = p0; p < p1; ++p) {
    const uint32_t* panel = w.data.get() + p * pairs * kNR;
    const int64_t j0 = p * kNR, cols = std::min(kNR, n - j0);
    const float* b = bias != nullptr ? bias + j0 : nullptr;
    for (int64_t i = 0; i < m; i += kMR) {
      const int64_t rows = std::min(kMR, m - i);
      const int pf = i == 0 ? kOwnPanel : i == kMR && p + 1 < p1 ? kNextPanel : kNoPrefetch;
      kTiles[pf][(cols + 15) / 16 - 1][rows](pairs, xb + i * ldx, ldx, panel, b, post, cols,
                                             y + i * n + j0, n);
    }
    if (post == GemmPostOp::gelu_erf)
      for (int64_t i = 0; i < m; ++i)
        gelu_forward_serial<float>(cols, y + i * n + j0, y + i * n + j0);
  }
}

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
  const uint32_t* xb = scratch.data();
  const int64_t panels = (w.n + kNR - 1) / kNR;
  if (omp_in_parallel()) {
    run_panels(m, xb, pairs, w, bias, post, y, 0, panels);
    return;
  }
  // Panels per task: enough multiply-adds (~128k) that waking a thread pays.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 17) / (m * k * kNR));
  parallel_for(panels, grain,
               [&](int64_t p0, int64_t p1) { run_panels(m, xb, pairs, w, bias, post, y, p0, p1); });
}

}  // namespace tfm::cpu
