// What the few-row inference kernels over packed weights share (packed_f32_cpu.cpp,
// packed_bf16_cpu.cpp, packed_int8_cpu.cpp; internal to ops/cpu): weights packed once into
// panels of 48 output channels, and the walk over panels, column blocks and row tiles, split over
// threads. Each kernel brings, per CPU level, its register tile: kMR rows × kCols columns of a
// panel (AVX-512: 8 × 48, three zmm vectors a row; AVX2: 4 × 24 (f32), 6 × 16 (int8) or 4 × 16
// (bf16)), with its prefetch and epilogue. Every output is one sum over k
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
// the next block's (the second row tile: it computes from cache, so the memory bus is free), or
// its slice of the next chunk (kSpread, every tile of a chunk: see run_panel_spread).
inline constexpr int kNoPrefetch = 0, kOwnPanel = 1, kNextPanel = 2, kSpread = 3;

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
  // kSpread: the first byte of this tile's slice of the next chunk, and the slice's cache lines
  // a depth step in 16.16 fixed point (the line of step q is (q · ahead_step) >> 16).
  const char* ahead = nullptr;
  int64_t ahead_step = 0;
  // kSpread's chunks: start from the partial sums in y instead of zero.
  bool accumulate = false;
};

// Kernel: a struct with
//   using Word = ...;                        the weight word (f32, a bf16 pair, an s8 pair)
//   static constexpr int kMR, kCols, kLanes; rows and columns of a tile, f32 lanes a vector
//   template <int MR, int NV, int Prefetch>
//   static void tile(const TileArgs& a, int64_t row, int64_t col, const Word* block,
//                    int64_t cols);
// computing rows [row, row + MR) × columns [col, col + cols) (cols ≤ NV · kLanes) from `block`,
// the first of the tile's columns in a panel whose depth steps are kNR words apart. A kernel
// that also has
//   static constexpr int64_t kChunkDepth;    depth steps a chunk
//   using XWord = ...;                       x's word
// and a tile honouring `accumulate` is walked by run_panel_spread (kSpread), any other by
// run_panel_blocks (kOwnPanel, kNextPanel).
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
  static constexpr std::array<Vectors, 4> table = {
      vectors<kNoPrefetch>(std::make_index_sequence<kVectors>()),
      vectors<kOwnPanel>(std::make_index_sequence<kVectors>()),
      vectors<kNextPanel>(std::make_index_sequence<kVectors>()),
      vectors<kSpread>(std::make_index_sequence<kVectors>())};
};

// The prefetch of the first and the other row tiles of a column block (kOwnPanel, kNextPanel).
template <class Kernel>
void run_panel_blocks(int64_t m, int64_t n, const TileArgs& a, const typename Kernel::Word* panel,
                      int64_t j0, bool last) {
  constexpr int64_t kMR = Kernel::kMR, kCols = Kernel::kCols, kLanes = Kernel::kLanes;
  const int64_t panel_cols = std::min(kNR, n - j0);
  for (int64_t c0 = 0; c0 < panel_cols; c0 += kCols) {
    const int64_t cols = std::min(kCols, panel_cols - c0);
    const bool more = c0 + kCols < panel_cols || !last;
    for (int64_t i = 0; i < m; i += kMR) {
      const int64_t rows = std::min(kMR, m - i);
      const int pf = i == 0 ? kOwnPanel : i == kMR && more ? kNextPanel : kNoPrefetch;
      Tiles<Kernel>::table[pf][(cols + kLanes - 1) / kLanes - 1][rows](a, i, j0 + c0, panel + c0,
                                                                       cols);
    }
  }
}

// kSpread: the panel is walked in chunks of at most Kernel::kChunkDepth depth steps, and every
// tile of a chunk prefetches an equal slice of the next chunk (the next bytes: the same panel's
// next chunk or the next panel's first) into L2, so the next chunk streams from memory while this
// one computes and its first row tile finds it in L2. Chunks keep the two in L2 when a panel is
// deep (k = 2048: 384 KiB a panel); a chunk's tiles add to the sums the last chunk left in y, in
// the same order over k, so the results are those of one pass. The range's last chunk
// prefetches nothing. AVX2 on Zen 2, bench_packed_f32 (4 × 24 tiles): 32 rows × 2048 × 512 from
// 52 to 82 GFLOP/s, 8 rows from 27 to 44.
template <class Kernel>
void run_panel_spread(int64_t m, int64_t n, const TileArgs& a, const typename Kernel::Word* panel,
                      int64_t j0, bool last) {
  constexpr int64_t kMR = Kernel::kMR, kCols = Kernel::kCols, kLanes = Kernel::kLanes;
  using XWord = typename Kernel::XWord;
  const int64_t panel_cols = std::min(kNR, n - j0);
  const int64_t tiles = (panel_cols + kCols - 1) / kCols * ((m + kMR - 1) / kMR);
  for (int64_t k0 = 0; k0 < a.depth; k0 += Kernel::kChunkDepth) {
    const int64_t depth = std::min(Kernel::kChunkDepth, a.depth - k0);
    const bool final_chunk = k0 + depth == a.depth;
    const typename Kernel::Word* chunk = panel + k0 * kNR;
    // The next chunk's bytes: this panel's next chunk, or the next panel's first.
    const int64_t ahead_depth =
        std::min(Kernel::kChunkDepth, final_chunk ? a.depth : a.depth - k0 - depth);
    const int64_t lines =
        ahead_depth * kNR * static_cast<int64_t>(sizeof(typename Kernel::Word)) / 64;
    const int64_t slice = (lines + tiles - 1) / tiles;
    TileArgs t = a;
    t.depth = depth;
    t.x = static_cast<const XWord*>(a.x) + k0;
    t.accumulate = k0 > 0;
    if (!final_chunk) {  // partial sums: no bias, no activation
      t.bias = nullptr;
      t.post = Activation::none;
    }
    t.ahead_step = (slice << 16) / depth + 1;
    const char* next = reinterpret_cast<const char*>(chunk + depth * kNR);
    const int pf = last && final_chunk ? kNoPrefetch : kSpread;
    int64_t index = 0;
    for (int64_t c0 = 0; c0 < panel_cols; c0 += kCols) {
      const int64_t cols = std::min(kCols, panel_cols - c0);
      for (int64_t i = 0; i < m; i += kMR, ++index) {
        t.ahead = next + index * slice * 64;
        Tiles<Kernel>::table[pf][(cols + kLanes - 1) / kLanes - 1][std::min(kMR, m - i)](
            t, i, j0 + c0, chunk + c0, cols);
      }
    }
  }
}

// Panels [p0, p1) of a weight with n outputs, for every row of x (m rows).
template <class Kernel>
void run_panels(int64_t m, int64_t n, const TileArgs& a, const typename Kernel::Word* panels,
                int64_t p0, int64_t p1) {
  static_assert(kNR % Kernel::kCols == 0, "a tile's columns must divide the panel");
  for (int64_t p = p0; p < p1; ++p) {
    const typename Kernel::Word* panel = panels + p * a.depth * kNR;
    const int64_t j0 = p * kNR;
    if constexpr (requires { Kernel::kChunkDepth; })
      run_panel_spread<Kernel>(m, n, a, panel, j0, p + 1 == p1);
    else
      run_panel_blocks<Kernel>(m, n, a, panel, j0, p + 1 == p1);
    if (activation_needs_input(a.post))
      for (int64_t i = 0; i < m; ++i) {
        float* yr = a.y + i * a.ldy + j0;
        input_activation_serial<float>(a.post, std::min(kNR, n - j0), yr, yr);
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
