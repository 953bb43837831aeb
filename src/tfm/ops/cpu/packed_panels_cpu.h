// What the few-row inference kernels over packed weights share (packed_f32_cpu.cpp,
// packed_bf16_cpu.cpp, packed_int8_cpu.cpp; internal to ops/cpu): weights packed once into
// panels of 48 output channels, and the walk over panels, column blocks and row tiles, split over
// threads. Each kernel brings, per CPU level, its register tile: kMR rows × kCols columns of a
// panel (AVX-512: 8 × 48, three zmm vectors a row; AVX2: 6 × 16 or 4 × 16, two ymm vectors a
// row, as BLIS's Haswell kernel), with its prefetch and epilogue. Every output is one sum over k
// in a fixed order, whatever the tile, so the levels agree bit for bit where their arithmetic
// does (f32, int8) and a row's result depends neither on the other rows nor on the threads.
//
// This header holds no instructions of any level: it is compiled at the library's baseline, and
// the tiles it calls are compiled for their own level (simd_avx512.h, simd_avx2.h).
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/activation_cpu.h"
#include "tfm/ops/cpu/primitives.h"

namespace tfm::cpu::panels {

// Output channels per panel (three AVX-512 vectors, six AVX2 ones). The packed layout is the
// same at every level, so a weight packed once serves whichever kernel runs.
inline constexpr int64_t kNR = 48;

// What a tile prefetches: nothing, its own columns ahead (the first row tile of a column block),
// or the next block's (the second row tile: it computes from cache, so the memory bus is free).
inline constexpr int kNoPrefetch = 0, kOwnPanel = 1, kNextPanel = 2;

// What every tile is told. `extra` carries what a kernel's epilogue needs beyond bias and post
// (int8: the scales); `depth` is the panel's depth in weight words (k, or k pairs).
struct TileArgs {
  int64_t depth = 0;
  const void* x = nullptr;  // rows of `depth` input words, `ldx` words apart
  int64_t ldx = 0;
  const float* bias = nullptr;  // (N) or null
  Activation post = Activation::none;
  float* y = nullptr;  // (M, N), N = ldy
  int64_t ldy = 0;
  const void* extra = nullptr;
};

// Kernel: a struct with
//   using Word = ...;                        the weight word (f32, a bf16 pair, an s8 pair)
//   static constexpr int kMR, kCols, kLanes; rows and columns of a tile, f32 lanes a vector
//   template <int MR, int NV, int Prefetch>
//   static void tile(const TileArgs& a, int64_t row, int64_t col, const Word* block,
//                    int64_t cols);
// computing rows [row, row + MR) × columns [col, col + cols) (cols ≤ NV · kLanes) from `block`,
// the first of the tile's columns in a panel whose depth steps are kNR words apart.
template <class Kernel>
struct Tiles {
  using Word = typename Kernel::Word;
  using Fn = void (*)(const TileArgs&, int64_t, int64_t, const Word*, int64_t);
  static constexpr int kVectors = Kernel::kCols / Kernel::kLanes;
  using Rows = std::array<Fn, Kernel::kMR + 1>;
  using Vectors = std::array<Rows, kVectors>;

  template <int NV, int Prefetch, size_t... R>
  static constexpr Rows rows(std::index_sequence<R...>) {
    return {nullptr, Kernel::template tile<static_cast<int>(R) + 1, NV, Prefetch>...};
  }
  template <int Prefetch, size_t... V>
  static constexpr Vectors vectors(std::index_sequence<V...>) {
    return {rows<static_cast<int>(V) + 1, Prefetch>(std::make_index_sequence<Kernel::kMR>())...};
  }
  // [prefetch][vectors - 1][rows]
  static constexpr std::array<Vectors, 3> table = {
      vectors<kNoPrefetch>(std::make_index_sequence<kVectors>()),
      vectors<kOwnPanel>(std::make_index_sequence<kVectors>()),
      vectors<kNextPanel>(std::make_index_sequence<kVectors>())};
};

// Panels [p0, p1) of a weight with n outputs, for every row of x (m rows).
template <class Kernel>
void run_panels(int64_t m, int64_t n, const TileArgs& a, const typename Kernel::Word* panels,
                int64_t p0, int64_t p1) {
  constexpr int64_t kMR = Kernel::kMR, kCols = Kernel::kCols, kLanes = Kernel::kLanes;
  static_assert(kNR % kCols == 0, "a tile's columns must divide the panel");
  for (int64_t p = p0; p < p1; ++p) {
    const typename Kernel::Word* panel = panels + p * a.depth * kNR;
    const int64_t j0 = p * kNR, panel_cols = std::min(kNR, n - j0);
    for (int64_t c0 = 0; c0 < panel_cols; c0 += kCols) {
      const int64_t cols = std::min(kCols, panel_cols - c0);
      const bool more = c0 + kCols < panel_cols || p + 1 < p1;
      for (int64_t i = 0; i < m; i += kMR) {
        const int64_t rows = std::min(kMR, m - i);
        const int pf = i == 0 ? kOwnPanel : i == kMR && more ? kNextPanel : kNoPrefetch;
        Tiles<Kernel>::table[pf][(cols + kLanes - 1) / kLanes - 1][rows](a, i, j0 + c0, panel + c0,
                                                                         cols);
      }
    }
    if (activation_needs_input(a.post))
      for (int64_t i = 0; i < m; ++i) {
        float* yr = a.y + i * a.ldy + j0;
        input_activation_serial<float>(a.post, panel_cols, yr, yr);
      }
  }
}

// Every panel: split over the threads outside a parallel region (tasks of enough multiply-adds,
// ~128k, that waking a thread pays; `k` is the weight's input width), on the calling thread
// inside one.
template <class Kernel>
void run_all_panels(int64_t m, int64_t n, int64_t k, const TileArgs& a,
                    const typename Kernel::Word* panels) {
  const int64_t count = (n + kNR - 1) / kNR;
  if (omp_in_parallel()) {
    run_panels<Kernel>(m, n, a, panels, 0, count);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 17) / (m * k * kNR));
  parallel_for(count, grain,
               [&](int64_t p0, int64_t p1) { run_panels<Kernel>(m, n, a, panels, p0, p1); });
}

}  // namespace tfm::cpu::panels
