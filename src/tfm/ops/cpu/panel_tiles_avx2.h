// The AVX2 side of the packed-panel tiles (packed_panels_cpu.h): prefetch and epilogue of a tile
// of f32 accumulators in ymm registers. AVX2 + FMA is the library's floor, so this is the path
// every CPU can take; the target pragma keeps it so even where the baseline is set lower.
// Include it after every other header (see panel_tiles_avx512.h).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "tfm/ops/cpu/packed_panels_cpu.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,bmi2")

namespace tfm::cpu::panels::avx2 {

// Prefetches `ahead` depth steps on of a block `lines` cache lines wide into L1 (the first row
// tile of a block); the others find the block in cache.
template <int Prefetch, int Lines>
inline void prefetch_step(const void* wp, int64_t ahead_bytes) {
  if constexpr (Prefetch == kOwnPanel) {
    const char* at = static_cast<const char*>(wp) + ahead_bytes;
    for (int l = 0; l < Lines; ++l) _mm_prefetch(at + 64 * l, _MM_HINT_T0);
  }
}

// kSpread: depth step `step`'s line of the tile's slice of the next chunk, into L2.
template <int Prefetch>
inline void prefetch_slice(const TileArgs& a, int64_t step) {
  if constexpr (Prefetch == kSpread)
    _mm_prefetch(a.ahead + ((step * a.ahead_step) >> 16) * 64, _MM_HINT_T1);
}

// Lane masks (all ones = valid) of each of a tile's NV vectors of 8 when it has `cols` columns.
template <int NV>
inline void column_masks(int64_t cols, __m256i (&mask)[NV]) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int c = 0; c < NV; ++c) {
    const int left = static_cast<int>(std::clamp<int64_t>(cols - 8 * c, 0, 8));
    mask[c] = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lanes);
  }
}

// acc[r] = y[r, :cols] (a chunk's partial sums; see run_panel_spread), or zero.
template <int MR, int NV>
inline void load_tile(__m256 (&acc)[MR][NV], bool accumulate, int64_t cols, const float* y,
                      int64_t ldy) {
  __m256i mask[NV];
  column_masks<NV>(cols, mask);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 3
    for (int c = 0; c < NV; ++c)
      acc[r][c] = !accumulate      ? _mm256_setzero_ps()
                  : cols == 8 * NV ? _mm256_loadu_ps(y + r * ldy + 8 * c)
                                   : _mm256_maskload_ps(y + r * ldy + 8 * c, mask[c]);
}

// y[r, :cols] = post(acc[r] + bias) for the tile's MR rows (ReLU in registers; GELU is applied
// by run_panels afterwards). Full tiles store whole vectors; the last block of a weight whose N
// is not a multiple of 16 stores through masks.
template <int MR, int NV>
inline void store_tile(const __m256 (&acc)[MR][NV], const float* bias, Activation post,
                       int64_t cols, float* y, int64_t ldy) {
  const bool full = cols == 8 * NV;
  __m256i mask[NV];
  column_masks<NV>(cols, mask);
  __m256 b[NV];
  for (int c = 0; c < NV; ++c)
    b[c] = bias == nullptr ? _mm256_setzero_ps()
           : full          ? _mm256_loadu_ps(bias + 8 * c)
                           : _mm256_maskload_ps(bias + 8 * c, mask[c]);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
    for (int c = 0; c < NV; ++c) {
      __m256 v = _mm256_add_ps(acc[r][c], b[c]);
      if (post == Activation::relu) v = _mm256_max_ps(v, _mm256_setzero_ps());
      if (full)
        _mm256_storeu_ps(y + r * ldy + 8 * c, v);
      else
        _mm256_maskstore_ps(y + r * ldy + 8 * c, mask[c], v);
    }
  }
}

}  // namespace tfm::cpu::panels::avx2

#pragma GCC pop_options
