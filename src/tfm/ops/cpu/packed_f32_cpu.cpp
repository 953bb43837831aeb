#include "tfm/ops/cpu/packed_f32_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tfm/core/allocator.h"
#include "tfm/core/check.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/packed_panels_cpu.h"

// GCC 12 warns about the deliberately undefined registers inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tfm::cpu {

namespace {

using panels::kNR;
static_assert(kNR == kPackedF32Panel);

struct F32Kernel {
  using Word = float;

#ifdef __AVX512F__
  // k steps (18 KiB) ahead that the first row tile of a panel prefetches its weights: they
  // stream from L3 or memory (a model's weights outgrow L2), and the stalls on them were the
  // kernel's hot spot. bench small greedy, 1 thread: 16 steps 0.128 s, 48 0.114 s, 96 0.111 s,
  // 192 0.113 s.
  static constexpr int64_t kPrefetch = 96;

  // One register tile: MR rows × NV of the panel's three column vectors. NV < 3 for the last
  // panel of a weight whose N is not a multiple of 48: it computes only the vectors it has
  // (N = 256: 5 panels and one of 16 columns, where three vectors would waste 11 % of the
  // multiply-adds).
  template <int MR, int NV, int Prefetch>
  static void tile_avx512(int64_t k, const float* x, int64_t ldx, const float* panel,
                          const float* bias, GemmPostOp post, int64_t cols, float* y, int64_t ldy) {
    __m512 acc[MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
      for (int c = 0; c < NV; ++c) acc[r][c] = _mm512_setzero_ps();
    for (int64_t p = 0; p < k; ++p) {
      const float* wp = panel + p * kNR;
      panels::prefetch_step<NV, Prefetch>(wp, k, kPrefetch);
      __m512 w[NV];
#pragma GCC unroll 3
      for (int c = 0; c < NV; ++c) w[c] = _mm512_loadu_ps(wp + 16 * c);
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const __m512 xv = _mm512_set1_ps(x[r * ldx + p]);
#pragma GCC unroll 3
        for (int c = 0; c < NV; ++c) acc[r][c] = _mm512_fmadd_ps(xv, w[c], acc[r][c]);
      }
    }
    panels::store_tile<MR, NV>(acc, bias, post, cols, y, ldy);
  }
#endif

  // The same sums in the same order without AVX-512 (builds for other CPUs).
  template <int MR>
  static void tile_portable(int64_t k, const float* x, int64_t ldx, const float* panel,
                            const float* bias, GemmPostOp post, int64_t cols, float* y,
                            int64_t ldy) {
    float acc[MR][kNR] = {};
    for (int64_t p = 0; p < k; ++p) {
      const float* wp = panel + p * kNR;
      for (int r = 0; r < MR; ++r) {
        const float xv = x[r * ldx + p];
#pragma omp simd
        for (int64_t j = 0; j < kNR; ++j) acc[r][j] = std::fma(xv, wp[j], acc[r][j]);
      }
    }
    panels::store_tile_portable<MR>(acc, bias, post, cols, y, ldy);
  }

  template <int MR, int NV, int Prefetch>
  static void tile(int64_t k, const float* x, int64_t ldx, const float* panel, const float* bias,
                   GemmPostOp post, int64_t cols, float* y, int64_t ldy) {
#ifdef __AVX512F__
    tile_avx512<MR, NV, Prefetch>(k, x, ldx, panel, bias, post, cols, y, ldy);
#else
    tile_portable<MR>(k, x, ldx, panel, bias, post, cols, y, ldy);
#endif
  }
};

}  // namespace

PackedF32 pack_f32(int64_t n, int64_t k, const float* w) {
  TFM_CHECK(n > 0 && k > 0) << "pack_f32: empty weight (" << n << ", " << k << ")";
  PackedF32 packed;
  packed.n = n;
  packed.k = k;
  const int64_t panels = (n + kNR - 1) / kNR;
  packed.bytes = static_cast<size_t>(panels * k * kNR) * sizeof(float);
  packed.data = std::static_pointer_cast<float>(cpu_allocator().allocate(packed.bytes));
  float* out = packed.data.get();
  parallel_for(panels, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float* panel = out + p * k * kNR;
      const int64_t j0 = p * kNR, cols = std::min(kNR, n - j0);
      std::memset(panel, 0, static_cast<size_t>(k * kNR) * sizeof(float));
      for (int64_t j = 0; j < cols; ++j) {
        const float* row = w + (j0 + j) * k;
        for (int64_t q = 0; q < k; ++q) panel[q * kNR + j] = row[q];
      }
    }
  });
  return packed;
}

void packed_f32_linear_forward(int64_t m, const float* x, const PackedF32& w, const float* bias,
                               GemmPostOp post, float* y) {
  TFM_CHECK(m >= 0) << "packed_f32_linear_forward: negative row count " << m;
  if (m == 0) return;
  TFM_CHECK(w.data != nullptr) << "packed_f32_linear_forward: weights not packed";
  panels::run_all_panels<F32Kernel>(m, w.n, w.k, w.k, x, w.k, w.data.get(), bias, post, y);
}

}  // namespace tfm::cpu
