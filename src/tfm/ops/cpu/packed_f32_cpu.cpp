#include "tfm/ops/cpu/packed_f32_cpu.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "tfm/core/allocator.h"
#include "tfm/core/check.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/activation_cpu.h"

// GCC 12 warns about the deliberately undefined registers inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tfm::cpu {

namespace {

constexpr int64_t kNR = kPackedF32Panel;
// Rows per register tile: 8 rows × 3 vectors = 24 accumulators, plus the 3 weight vectors and a
// broadcast, of the 32 zmm registers.
constexpr int64_t kMR = 8;

// What a tile prefetches: nothing, its own panel ahead (the first row tile of a panel), or the
// next panel (the second row tile: it computes from cache, so the memory bus is free).
constexpr int kNoPrefetch = 0, kOwnPanel = 1, kNextPanel = 2;

#ifdef __AVX512F__
// k steps (18 KiB) ahead that the first row tile of a panel prefetches its weights: they stream
// from L3 or memory (a model's weights outgrow L2), and the stalls on them were the kernel's hot
// spot. bench small greedy, 1 thread: 16 steps 0.128 s, 48 0.114 s, 96 0.111 s, 192 0.113 s.
constexpr int64_t kPrefetch = 96;

// One register tile: MR rows × NV of the panel's three column vectors, then acc + bias and the
// post-op (ReLU in registers; GELU by the shared serial routine afterwards) stored to the `cols`
// valid columns. NV < 3 for the last panel of a weight whose N is not a multiple of 48: it
// computes only the vectors it has (N = 256: 5 panels and one of 16 columns, where three vectors
// would waste 11 % of the multiply-adds).
template <int MR, int NV, int Prefetch>
void tile_avx512(int64_t k, const float* x, int64_t ldx, const float* panel, const float* bias,
                 GemmPostOp post, int64_t cols, float* y, int64_t ldy) {
  __m512 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
    for (int c = 0; c < NV; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const float* wp = panel + p * kNR;
    if constexpr (Prefetch == kOwnPanel) {
      // Past the panel's end this reaches into the next panel (or harmlessly past the buffer).
      const char* ahead = reinterpret_cast<const char*>(wp + kPrefetch * kNR);
#pragma GCC unroll 3
      for (int c = 0; c < NV; ++c) _mm_prefetch(ahead + 64 * c, _MM_HINT_T0);
    } else if constexpr (Prefetch == kNextPanel) {
      // The same k of the next panel, into L2: its first tile then computes from cache.
      const char* next = reinterpret_cast<const char*>(wp + k * kNR);
      _mm_prefetch(next, _MM_HINT_T1);
      _mm_prefetch(next + 64, _MM_HINT_T1);
      _mm_prefetch(next + 128, _MM_HINT_T1);
    }
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

// The same sums in the same order without AVX-512 (builds for other CPUs).
template <int MR>
void tile_portable(int64_t k, const float* x, int64_t ldx, const float* panel, const float* bias,
                   GemmPostOp post, int64_t cols, float* y, int64_t ldy) {
  float acc[MR][kNR] = {};
  for (int64_t p = 0; p < k; ++p) {
    const float* wp = panel + p * kNR;
    for (int r = 0; r < MR; ++r) {
      const float xv = x[r * ldx + p];
#pragma omp simd
      for (int64_t j = 0; j < kNR; ++j) acc[r][j] = std::fma(xv, wp[j], acc[r][j]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      const float v = acc[r][j] + (bias != nullptr ? bias[j] : 0.f);
      y[r * ldy + j] = post == GemmPostOp::relu ? std::max(v, 0.f) : v;
    }
}

template <int MR, int NV, int Prefetch>
void tile(int64_t k, const float* x, int64_t ldx, const float* panel, const float* bias,
          GemmPostOp post, int64_t cols, float* y, int64_t ldy) {
#ifdef __AVX512F__
  tile_avx512<MR, NV, Prefetch>(k, x, ldx, panel, bias, post, cols, y, ldy);
#else
  tile_portable<MR>(k, x, ldx, panel, bias, post, cols, y, ldy);
#endif
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, const float*, GemmPostOp,
                        int64_t, float*, int64_t);

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
// [prefetch][vectors - 1][rows]: the first row tile of a panel fetches it, the others find it
// in cache.
constexpr std::array<TileFn, kMR + 1> kTiles[3][3] = {
    {tiles_of<1, kNoPrefetch>(), tiles_of<2, kNoPrefetch>(), tiles_of<3, kNoPrefetch>()},
    {tiles_of<1, kOwnPanel>(), tiles_of<2, kOwnPanel>(), tiles_of<3, kOwnPanel>()},
    {tiles_of<1, kNextPanel>(), tiles_of<2, kNextPanel>(), tiles_of<3, kNextPanel>()}};

// Panels [p0, p1) for every row.
void run_panels(int64_t m, const float* x, const PackedF32& w, const float* bias, GemmPostOp post,
                float* y, int64_t p0, int64_t p1) {
  const int64_t n = w.n, k = w.k;
  for (int64_t p = p0; p < p1; ++p) {
    const float* panel = w.data.get() + p * k * kNR;
    const int64_t j0 = p * kNR, cols = std::min(kNR, n - j0);
    const float* b = bias != nullptr ? bias + j0 : nullptr;
    for (int64_t i = 0; i < m; i += kMR) {
      const int64_t rows = std::min(kMR, m - i);
      const int pf = i == 0 ? kOwnPanel : i == kMR && p + 1 < p1 ? kNextPanel : kNoPrefetch;
      kTiles[pf][(cols + 15) / 16 - 1][rows](k, x + i * k, k, panel, b, post, cols, y + i * n + j0,
                                             n);
    }
    if (post == GemmPostOp::gelu_erf)
      for (int64_t i = 0; i < m; ++i)
        gelu_forward_serial<float>(cols, y + i * n + j0, y + i * n + j0);
  }
}

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
  const int64_t panels = (w.n + kNR - 1) / kNR;
  // Panels per task: enough multiply-adds (~128k) that waking a thread pays.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 17) / (m * w.k * kNR));
  if (omp_in_parallel()) {
    run_panels(m, x, w, bias, post, y, 0, panels);
    return;
  }
  parallel_for(panels, grain,
               [&](int64_t p0, int64_t p1) { run_panels(m, x, w, bias, post, y, p0, p1); });
}

}  // namespace tfm::cpu
