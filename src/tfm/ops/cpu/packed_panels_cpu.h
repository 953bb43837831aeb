// What the two few-row inference kernels over packed weights share (packed_f32_cpu.cpp,
// packed_bf16_cpu.cpp; internal to ops/cpu): panels of 48 output channels, register tiles of up
// to 8 rows × 3 vectors of 16 f32 lanes, the prefetch each tile issues, the tile's epilogue
// (bias, ReLU, a masked store of the valid columns) and the walk over panels and row tiles, split
// over threads. The kernels differ only in their weight word (an f32, or a bf16 k pair) and in
// the multiply-add of the tile's inner loop.
#pragma once

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/activation_cpu.h"
#include "tfm/ops/cpu/primitives.h"

namespace tfm::cpu::panels {

// Columns per panel: three AVX-512 vectors.
inline constexpr int64_t kNR = 48;
// Rows per register tile: 8 rows × 3 vectors = 24 accumulators, plus the 3 weight vectors and a
// broadcast, of the 32 zmm registers.
inline constexpr int64_t kMR = 8;

// What a tile prefetches: nothing, its own panel ahead (the first row tile of a panel), or the
// next panel (the second row tile: it computes from cache, so the memory bus is free).
inline constexpr int kNoPrefetch = 0, kOwnPanel = 1, kNextPanel = 2;

#ifdef __AVX512F__
// The prefetches of step `wp` (one depth step of the panel, kNR 4-byte words) of a panel
// `depth` steps deep: `ahead` steps on into L1 for the first row tile, the same step of the next
// panel into L2 for the second. Past the panel's end the first reaches into the next panel (or
// harmlessly past the buffer).
template <int NV, int Prefetch>
inline void prefetch_step(const void* wp, int64_t depth, int64_t ahead) {
  const char* at = static_cast<const char*>(wp);
  if constexpr (Prefetch == kOwnPanel) {
#pragma GCC unroll 3
    for (int c = 0; c < NV; ++c) _mm_prefetch(at + 4 * ahead * kNR + 64 * c, _MM_HINT_T0);
  } else if constexpr (Prefetch == kNextPanel) {
    const char* next = at + 4 * depth * kNR;
    _mm_prefetch(next, _MM_HINT_T1);
    _mm_prefetch(next + 64, _MM_HINT_T1);
    _mm_prefetch(next + 128, _MM_HINT_T1);
  }
}

// y[r, :cols] = post(acc[r] + bias) for the tile's MR rows (ReLU in registers; GELU is applied
// by run_panels afterwards).
template <int MR, int NV>
inline void store_tile(const __m512 (&acc)[MR][NV], const float* bias, GemmPostOp post,
                       int64_t cols, float* y, int64_t ldy) {
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

// The portable tiles' epilogue: the same as store_tile from a plain accumulator array.
template <int MR>
inline void store_tile_portable(const float (&acc)[MR][kNR], const float* bias, GemmPostOp post,
                                int64_t cols, float* y, int64_t ldy) {
  for (int r = 0; r < MR; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      const float v = acc[r][j] + (bias != nullptr ? bias[j] : 0.f);
      y[r * ldy + j] = post == GemmPostOp::relu ? std::max(v, 0.f) : v;
    }
}

// Kernel: a struct with `using Word = ...` (the 4-byte weight word) and
//   template <int MR, int NV, int Prefetch> static void tile(int64_t depth, const Word* x,
//       int64_t ldx, const Word* panel, const float* bias, GemmPostOp post, int64_t cols,
//       float* y, int64_t ldy);
// computing MR rows of x (depth words a row, `ldx` apart) against the NV vectors of one panel.
template <class Kernel>
struct Tiles {
  using Word = typename Kernel::Word;
  using Fn = void (*)(int64_t, const Word*, int64_t, const Word*, const float*, GemmPostOp, int64_t,
                      float*, int64_t);
  template <int NV, int Prefetch>
  static constexpr std::array<Fn, kMR + 1> of() {
    return {nullptr,
            Kernel::template tile<1, NV, Prefetch>,
            Kernel::template tile<2, NV, Prefetch>,
            Kernel::template tile<3, NV, Prefetch>,
            Kernel::template tile<4, NV, Prefetch>,
            Kernel::template tile<5, NV, Prefetch>,
            Kernel::template tile<6, NV, Prefetch>,
            Kernel::template tile<7, NV, Prefetch>,
            Kernel::template tile<8, NV, Prefetch>};
  }
  // [prefetch][vectors - 1][rows]: the first row tile of a panel fetches it, the others find it
  // in cache.
  static constexpr std::array<Fn, kMR + 1> table[3][3] = {
      {of<1, kNoPrefetch>(), of<2, kNoPrefetch>(), of<3, kNoPrefetch>()},
      {of<1, kOwnPanel>(), of<2, kOwnPanel>(), of<3, kOwnPanel>()},
      {of<1, kNextPanel>(), of<2, kNextPanel>(), of<3, kNextPanel>()}};
};

// Panels [p0, p1) of a weight with n outputs, `depth` words a panel column, for every row of x.
template <class Kernel>
void run_panels(int64_t m, int64_t n, int64_t depth, const typename Kernel::Word* x, int64_t ldx,
                const typename Kernel::Word* panels, const float* bias, GemmPostOp post, float* y,
                int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    const typename Kernel::Word* panel = panels + p * depth * kNR;
    const int64_t j0 = p * kNR, cols = std::min(kNR, n - j0);
    const float* b = bias != nullptr ? bias + j0 : nullptr;
    for (int64_t i = 0; i < m; i += kMR) {
      const int64_t rows = std::min(kMR, m - i);
      const int pf = i == 0 ? kOwnPanel : i == kMR && p + 1 < p1 ? kNextPanel : kNoPrefetch;
      Tiles<Kernel>::table[pf][(cols + 15) / 16 - 1][rows](depth, x + i * ldx, ldx, panel, b, post,
                                                           cols, y + i * n + j0, n);
    }
    if (post == GemmPostOp::gelu_erf)
      for (int64_t i = 0; i < m; ++i)
        gelu_forward_serial<float>(cols, y + i * n + j0, y + i * n + j0);
  }
}

// Every panel: split over the threads outside a parallel region (tasks of enough multiply-adds,
// ~128k, that waking a thread pays; `k` is the weight's input width), on the calling thread
// inside one.
template <class Kernel>
void run_all_panels(int64_t m, int64_t n, int64_t k, int64_t depth, const typename Kernel::Word* x,
                    int64_t ldx, const typename Kernel::Word* panels, const float* bias,
                    GemmPostOp post, float* y) {
  const int64_t count = (n + kNR - 1) / kNR;
  if (omp_in_parallel()) {
    run_panels<Kernel>(m, n, depth, x, ldx, panels, bias, post, y, 0, count);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 17) / (m * k * kNR));
  parallel_for(count, grain, [&](int64_t p0, int64_t p1) {
    run_panels<Kernel>(m, n, depth, x, ldx, panels, bias, post, y, p0, p1);
  });
}

}  // namespace tfm::cpu::panels
