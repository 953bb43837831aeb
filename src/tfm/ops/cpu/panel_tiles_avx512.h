// The AVX-512 side of the packed-panel tiles (packed_panels_cpu.h): prefetch and epilogue of a
// tile of f32 accumulators in zmm registers. Compiled for AVX-512 by the target pragma below
// whatever the library's baseline, and called only when cpu_isa() says the CPU has it. Include
// it after every other header, so that no inline function of another header (the standard
// library's included) is compiled for AVX-512 here and then chosen by the linker for callers on
// other CPUs.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "tfm/ops/cpu/packed_panels_cpu.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,bmi2")

namespace tfm::cpu::panels::avx512 {

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

// Masks of the valid lanes of each of a tile's NV vectors when it has `cols` columns.
template <int NV>
inline void column_masks(int64_t cols, __mmask16 (&mask)[NV]) {
  for (int c = 0; c < NV; ++c) {
    const int64_t left = std::clamp<int64_t>(cols - 16 * c, 0, 16);
    mask[c] = static_cast<__mmask16>((uint32_t{1} << left) - 1u);
  }
}

// y[r, :cols] = post(acc[r] + bias) for the tile's MR rows (ReLU in registers; GELU is applied
// by run_panels afterwards).
template <int MR, int NV>
inline void store_tile(const __m512 (&acc)[MR][NV], const float* bias, Activation post,
                       int64_t cols, float* y, int64_t ldy) {
  __mmask16 mask[NV];
  column_masks<NV>(cols, mask);
  __m512 b[NV];
  for (int c = 0; c < NV; ++c)
    b[c] = bias != nullptr ? _mm512_maskz_loadu_ps(mask[c], bias + 16 * c) : _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
    for (int c = 0; c < NV; ++c) {
      __m512 v = _mm512_add_ps(acc[r][c], b[c]);
      if (post == Activation::relu) v = _mm512_max_ps(v, _mm512_setzero_ps());
      _mm512_mask_storeu_ps(y + r * ldy + 16 * c, mask[c], v);
    }
  }
}

}  // namespace tfm::cpu::panels::avx512

#pragma GCC pop_options
