#include "tfm/ops/cpu/packed_bf16_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "tfm/core/allocator.h"
#include "tfm/core/check.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/cpu/packed_panels_cpu.h"
// Last: the level-specific code (panel_tiles_avx512.h says why).
#include "tfm/ops/cpu/panel_tiles_avx2.h"
#include "tfm/ops/cpu/panel_tiles_avx512.h"

// GCC 12 warns about the deliberately undefined registers inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tfm::cpu {

namespace {

using panels::kNR;
using panels::TileArgs;
static_assert(kNR == kPackedBf16Panel);

// Row i of x (M, K) f32 -> row i of out (M, kp) bf16, kp = K rounded up to even, zero-padded: the
// 32-bit word q of a row is then the pair (x[2q], x[2q + 1]) that one vdpbf16ps lane takes.
void convert_rows_bf16(int64_t m, int64_t k, const float* x, uint16_t* out) {
  const int64_t kp = (k + 1) & ~int64_t{1};
  for (int64_t i = 0; i < m; ++i) {
    const float* row = x + i * k;
    uint16_t* o = out + i * kp;
#pragma omp simd
    for (int64_t j = 0; j < k; ++j) o[j] = to_bf16(row[j]);
    if (k < kp) o[k] = 0;
  }
}

// The same values as f32 (each x rounded to bf16 and widened back, exact), for the AVX2 tile,
// which multiplies in f32.
void convert_rows_rounded(int64_t m, int64_t k, const float* x, float* out) {
  const int64_t kp = (k + 1) & ~int64_t{1};
  for (int64_t i = 0; i < m; ++i) {
    const float* row = x + i * k;
    float* o = out + i * kp;
#pragma omp simd
    for (int64_t j = 0; j < k; ++j) o[j] = bf16_to_float(to_bf16(row[j]));
    if (k < kp) o[k] = 0.f;
  }
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,bmi2")

struct Bf16Avx512 {
  using Word = uint32_t;  // a k pair of bf16 values
  static constexpr int kMR = 8, kCols = 48, kLanes = 16;
  // k pairs (9 KiB) ahead that the first row tile of a panel prefetches its weights. BM_decode
  // bf16, 1 thread, medians of 3 (small / base): 24 pairs 47.0 / 327 ms, 48 46.2 / 325, 96
  // 48.1 / 336, 192 47.8 / 329 — flat within the noise; 48 it is.
  static constexpr int64_t kPrefetch = 48;

  // One register tile: MR rows × NV of the panel's three column vectors, one vdpbf16ps (two
  // multiply-adds a lane) per row and vector and k pair. NV < 3 for the last panel of a weight
  // whose N is not a multiple of 48. x holds bf16 pairs (convert_rows_bf16).
  template <int MR, int NV, int Prefetch>
  static void tile(const TileArgs& a, int64_t row, int64_t col, const uint32_t* panel,
                   int64_t cols) {
    const int64_t pairs = a.depth, ldx = a.ldx;
    const uint32_t* x = static_cast<const uint32_t*>(a.x) + row * ldx;
    __m512 acc[MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
      for (int c = 0; c < NV; ++c) acc[r][c] = _mm512_setzero_ps();
    for (int64_t q = 0; q < pairs; ++q) {
      const uint32_t* wp = panel + q * kNR;
      panels::avx512::prefetch_step<NV, Prefetch>(wp, pairs, kPrefetch);
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
    panels::avx512::store_tile<MR, NV>(acc, a.bias != nullptr ? a.bias + col : nullptr, a.post,
                                       cols, a.y + row * a.ldy + col, a.ldy);
  }
};

#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma,bmi2")

// Without AVX512-BF16: the same products (exact in f32) added in the same order as vdpbf16ps, odd
// k of a pair first, with fused multiply-adds (a product of two bf16 values is exact, so fma
// rounds as the instruction's add does); the values differ only where vdpbf16ps flushes
// subnormals to zero. The weights stay bf16 in memory (half the bytes of f32) and are widened in
// registers; x comes widened already (convert_rows_rounded).
struct Bf16Avx2 {
  using Word = uint32_t;
  // 4 rows × 16 columns: 8 accumulators, the even and odd halves of 2 weight vectors and a
  // broadcast, of the 16 ymm registers.
  static constexpr int kMR = 4, kCols = 16, kLanes = 8;
  static constexpr int64_t kPrefetchBytes = 64 * kNR * 4;

  template <int MR, int NV, int Prefetch>
  static void tile(const TileArgs& a, int64_t row, int64_t col, const uint32_t* block,
                   int64_t cols) {
    const int64_t pairs = a.depth, ldx = a.ldx;
    const float* x = static_cast<const float*>(a.x) + row * ldx;
    const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
    __m256 acc[MR][NV];
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
      for (int c = 0; c < NV; ++c) acc[r][c] = _mm256_setzero_ps();
    for (int64_t q = 0; q < pairs; ++q) {
      const uint32_t* wp = block + q * kNR;
      panels::avx2::prefetch_step<Prefetch, 1>(wp, kPrefetchBytes);
      __m256 even[NV], odd[NV];
#pragma GCC unroll 2
      for (int c = 0; c < NV; ++c) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 8 * c));
        even[c] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
        odd[c] = _mm256_castsi256_ps(_mm256_and_si256(v, high));
      }
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        const __m256 x1 = _mm256_broadcast_ss(x + r * ldx + 2 * q + 1);
#pragma GCC unroll 2
        for (int c = 0; c < NV; ++c) acc[r][c] = _mm256_fmadd_ps(x1, odd[c], acc[r][c]);
        const __m256 x0 = _mm256_broadcast_ss(x + r * ldx + 2 * q);
#pragma GCC unroll 2
        for (int c = 0; c < NV; ++c) acc[r][c] = _mm256_fmadd_ps(x0, even[c], acc[r][c]);
      }
    }
    panels::avx2::store_tile<MR, NV>(acc, a.bias != nullptr ? a.bias + col : nullptr, a.post, cols,
                                     a.y + row * a.ldy + col, a.ldy);
  }
};

#pragma GCC pop_options

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
                                Activation post, float* y, CpuIsa isa) {
  TFM_CHECK(m >= 0) << "packed_bf16_linear_forward: negative row count " << m;
  if (m == 0) return;
  TFM_CHECK(w.data != nullptr) << "packed_bf16_linear_forward: weights not packed";
  TFM_CHECK(isa <= cpu_isa()) << "packed_bf16_linear_forward: level " << cpu_isa_name(isa)
                              << " is above this process's " << cpu_isa_name(cpu_isa());
  const int64_t k = w.k, pairs = (k + 1) / 2;
  // Grows to the largest call a thread has made and stays: no allocation in steady state.
  thread_local std::vector<uint32_t> scratch;
  if (isa >= CpuIsa::avx512_bf16) {
    if (scratch.size() < static_cast<size_t>(m * pairs)) scratch.resize(m * pairs);
    convert_rows_bf16(m, k, x, reinterpret_cast<uint16_t*>(scratch.data()));
    const TileArgs a{pairs, scratch.data(), pairs, bias, post, y, w.n, nullptr};
    panels::run_all_panels<Bf16Avx512>(m, w.n, k, a, w.data.get());
  } else {
    if (scratch.size() < static_cast<size_t>(m * 2 * pairs)) scratch.resize(m * 2 * pairs);
    float* xr = reinterpret_cast<float*>(scratch.data());
    convert_rows_rounded(m, k, x, xr);
    const TileArgs a{pairs, xr, 2 * pairs, bias, post, y, w.n, nullptr};
    panels::run_all_panels<Bf16Avx2>(m, w.n, k, a, w.data.get());
  }
}

}  // namespace tfm::cpu
