#include "tfm/ops/cpu/packed_f32_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tfm/core/allocator.h"
#include "tfm/core/check.h"
#include "tfm/core/parallel.h"
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
static_assert(kNR == kPackedF32Panel);

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,bmi2")

struct F32Avx512 {
  using Word = float;
  static constexpr int kMR = 8, kCols = 48, kLanes = 16;
  // k steps (18 KiB) ahead that the first row tile of a panel prefetches its weights: they
  // stream from L3 or memory (a model's weights outgrow L2), and the stalls on them were the
  // kernel's hot spot. bench small greedy, 1 thread: 16 steps 0.128 s, 48 0.114 s, 96 0.111 s,
  // 192 0.113 s.
  static constexpr int64_t kPrefetch = 96;

  // One register tile: MR rows × NV of the panel's three column vectors (8 × 3 = 24
  // accumulators, the 3 weight vectors and a broadcast, of the 32 zmm registers). NV < 3 for the
  // last panel of a weight whose N is not a multiple of 48: it computes only the vectors it has
  // (N = 256: 5 panels and one of 16 columns, where three vectors would waste 11 % of the
  // multiply-adds).
  template <int MR, int NV, int Prefetch>
  static void tile(const TileArgs& a, int64_t row, int64_t col, const float* panel, int64_t cols) {
    const int64_t k = a.depth, ldx = a.ldx;
    const float* x = static_cast<const float*>(a.x) + row * ldx;
    __m512 acc[MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
      for (int c = 0; c < NV; ++c) acc[r][c] = _mm512_setzero_ps();
    for (int64_t p = 0; p < k; ++p) {
      const float* wp = panel + p * kNR;
      panels::avx512::prefetch_step<NV, Prefetch>(wp, k, kPrefetch);
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
    panels::avx512::store_tile<MR, NV>(acc, a.bias != nullptr ? a.bias + col : nullptr, a.post,
                                       cols, a.y + row * a.ldy + col, a.ldy);
  }
};

#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma,bmi2")

struct F32Avx2 {
  using Word = float;
  // 4 rows × 24 columns: 12 accumulators, 3 weight vectors and a broadcast of the 16 ymm
  // registers, 7 loads a depth step for 12 FMAs (6 × 16, BLIS's Haswell tile, needs 8). With
  // the next chunk streamed into L2 by every tile (kSpread) it runs at 77–82 GFLOP/s a thread at
  // 32 rows and 85–91 at 128 (bench_packed_f32 on Zen 2, whose dnnl_sgemm ceiling is 87.7);
  // 6 × 16 tiles prefetching their own columns ran at 52–58 and 80–85. (A 2 × 48 tile for the
  // last rows of a greedy step, M % 4 of 1 or 2, was no faster end to end: dropped.)
  static constexpr int kMR = 4, kCols = 24, kLanes = 8;
  using XWord = float;
  // 96 KiB of a panel: a chunk and the next one stay in L2 (512 KiB on Zen 2, 1–2 MiB on newer
  // cores) beside the x rows.
  static constexpr int64_t kChunkDepth = 512;

  template <int MR, int NV, int Prefetch>
  static void tile(const TileArgs& a, int64_t row, int64_t col, const float* block, int64_t cols) {
    const int64_t k = a.depth, ldx = a.ldx;
    const float* x = static_cast<const float*>(a.x) + row * ldx;
    float* y = a.y + row * a.ldy + col;
    __m256 acc[MR][NV];
    panels::avx2::load_tile<MR, NV>(acc, a.accumulate, cols, y, a.ldy);
    for (int64_t p = 0; p < k; ++p) {
      const float* wp = block + p * kNR;
      panels::avx2::prefetch_slice<Prefetch>(a, p);
      __m256 w[NV];
#pragma GCC unroll 3
      for (int c = 0; c < NV; ++c) w[c] = _mm256_loadu_ps(wp + 8 * c);
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        const __m256 xv = _mm256_broadcast_ss(x + r * ldx + p);
#pragma GCC unroll 3
        for (int c = 0; c < NV; ++c) acc[r][c] = _mm256_fmadd_ps(xv, w[c], acc[r][c]);
      }
    }
    panels::avx2::store_tile<MR, NV>(acc, a.bias != nullptr ? a.bias + col : nullptr, a.post, cols,
                                     y, a.ldy);
  }
};

#pragma GCC pop_options

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
                               Activation post, float* y, CpuIsa isa) {
  TFM_CHECK(m >= 0) << "packed_f32_linear_forward: negative row count " << m;
  if (m == 0) return;
  TFM_CHECK(w.data != nullptr) << "packed_f32_linear_forward: weights not packed";
  TFM_CHECK(isa <= cpu_isa()) << "packed_f32_linear_forward: level " << cpu_isa_name(isa)
                              << " is above this process's " << cpu_isa_name(cpu_isa());
  TileArgs a{w.k, x, w.k, bias, post, y, w.n, nullptr};
  if (isa >= CpuIsa::avx512)
    panels::run_all_panels<F32Avx512>(m, w.n, w.k, a, w.data.get());
  else
    panels::run_all_panels<F32Avx2>(m, w.n, w.k, a, w.data.get());
}

void packed_f32_rows(int64_t m, const int32_t* ids, const PackedF32& w, float* out) {
  const int64_t k = w.k;
  const float* data = w.data.get();
  parallel_for(m, std::max<int64_t>(1, (int64_t{1} << 14) / k), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t id = ids[r];
      const float* col = data + (id / kNR) * k * kNR + id % kNR;  // channel id of its panel
      float* row = out + r * k;
      for (int64_t q = 0; q < k; ++q) row[q] = col[q * kNR];
    }
  });
}

}  // namespace tfm::cpu
