#include "tfm/ops/cpu/packed_int8_cpu.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "tfm/core/allocator.h"
#include "tfm/core/check.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/cpu/packed_panels_cpu.h"
// Last: the level-specific code (panel_tiles_avx512.h says why).
#include "tfm/ops/cpu/panel_tiles_avx2.h"

namespace tfm::cpu {

namespace {

using panels::kNR;
using panels::TileArgs;

// The epilogue's scales: per row of x (its quantisation) and per output channel (the weight's).
struct Int8Scales {
  const float* row_scale;
  const int32_t* row_zero;
  const float* col_scale;
  const int32_t* col_sums;
};

#pragma GCC push_options
#pragma GCC target("avx2,fma,bmi2")

struct Int8Avx2 {
  using Word = uint16_t;  // a k pair of s8 weights
  // 6 rows × 16 columns: 12 s32 accumulators, 2 widened weight vectors and a broadcast of the 16
  // ymm registers.
  static constexpr int kMR = 6, kCols = 16, kLanes = 8;
  static constexpr int64_t kPrefetchBytes = 64 * kNR * 2;

  template <int MR, int NV, int Prefetch>
  static void tile(const TileArgs& a, int64_t row, int64_t col, const uint16_t* block,
                   int64_t cols) {
    const int64_t pairs = a.depth, ldx = a.ldx;
    // x: per row, k pairs of u8 values widened to 16 bits, one 32-bit word a pair.
    const uint32_t* x = static_cast<const uint32_t*>(a.x) + row * ldx;
    __m256i acc[MR][NV];
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
      for (int c = 0; c < NV; ++c) acc[r][c] = _mm256_setzero_si256();
    for (int64_t q = 0; q < pairs; ++q) {
      const uint16_t* wp = block + q * kNR;
      panels::avx2::prefetch_step<Prefetch, 1>(wp, kPrefetchBytes);
      __m256i w[NV];
#pragma GCC unroll 2
      for (int c = 0; c < NV; ++c)
        w[c] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wp + 8 * c)));
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        const __m256i xv = _mm256_set1_epi32(static_cast<int>(x[r * ldx + q]));
#pragma GCC unroll 2
        for (int c = 0; c < NV; ++c)
          acc[r][c] = _mm256_add_epi32(acc[r][c], _mm256_madd_epi16(w[c], xv));
      }
    }
    // y = post(sx · sw · (acc − zx · Σq) + bias), in the order of the oneDNN path's epilogue.
    const auto& s = *static_cast<const Int8Scales*>(a.extra);
    const bool full = cols == 8 * NV;
    __m256i mask[NV];
    panels::avx2::column_masks<NV>(cols, mask);
    __m256 sw[NV], b[NV];
    __m256i sums[NV];
    for (int c = 0; c < NV; ++c) {
      const int64_t j = col + 8 * c;
      sw[c] =
          full ? _mm256_loadu_ps(s.col_scale + j) : _mm256_maskload_ps(s.col_scale + j, mask[c]);
      sums[c] = full ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.col_sums + j))
                     : _mm256_maskload_epi32(s.col_sums + j, mask[c]);
      b[c] = a.bias == nullptr ? _mm256_setzero_ps()
             : full            ? _mm256_loadu_ps(a.bias + j)
                               : _mm256_maskload_ps(a.bias + j, mask[c]);
    }
    for (int r = 0; r < MR; ++r) {
      const __m256 sx = _mm256_set1_ps(s.row_scale[row + r]);
      const __m256i zx = _mm256_set1_epi32(s.row_zero[row + r]);
      float* yr = a.y + (row + r) * a.ldy + col;
      for (int c = 0; c < NV; ++c) {
        const __m256i exact = _mm256_sub_epi32(acc[r][c], _mm256_mullo_epi32(zx, sums[c]));
        __m256 v = _mm256_mul_ps(_mm256_mul_ps(sx, sw[c]), _mm256_cvtepi32_ps(exact));
        if (a.bias != nullptr) v = _mm256_add_ps(v, b[c]);
        if (a.post == Activation::relu) v = _mm256_max_ps(v, _mm256_setzero_ps());
        if (full)
          _mm256_storeu_ps(yr + 8 * c, v);
        else
          _mm256_maskstore_ps(yr + 8 * c, mask[c], v);
      }
    }
  }
};

#pragma GCC pop_options

}  // namespace

void quantize_weights_s8(int64_t n, int64_t k, const float* w, int8_t* q, float* scales,
                         int32_t* sums) {
  std::atomic<int64_t> bad_row{-1};
  parallel_for(n, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = w + r * k;
      float amax = 0.f, probe = 0.f;
      for (int64_t j = 0; j < k; ++j) {
        amax = std::max(amax, std::fabs(row[j]));
        probe += row[j] * 0.f;
      }
      if (probe != 0.f) {
        int64_t none = -1;
        bad_row.compare_exchange_strong(none, r);
        continue;
      }
      const float s = amax > 0.f ? amax / 127.f : 1.f;
      int32_t sum = 0;
      for (int64_t j = 0; j < k; ++j) {
        const float v = std::clamp(std::nearbyint(row[j] / s), -127.f, 127.f);
        q[r * k + j] = static_cast<int8_t>(v);
        sum += static_cast<int32_t>(v);
      }
      scales[r] = s;
      sums[r] = sum;
    }
  });
  TFM_CHECK(bad_row.load() < 0) << "int8 weights: row " << bad_row.load() << " holds inf or NaN";
}

PackedInt8 pack_int8(int64_t n, int64_t k, const int8_t* q) {
  TFM_CHECK(n > 0 && k > 0) << "pack_int8: empty weight (" << n << ", " << k << ")";
  // |Σ_k qx · qw| ≤ K · 255 · 127 must fit the s32 accumulator.
  TFM_CHECK(k <= (int64_t{1} << 16)) << "pack_int8: " << k << " inputs exceed the 65536 whose "
                                     << "sums an s32 accumulator holds exactly";
  PackedInt8 packed;
  packed.n = n;
  packed.k = k;
  const int64_t panels = (n + kNR - 1) / kNR, pairs = (k + 1) / 2;
  packed.bytes = static_cast<size_t>(panels * pairs * kNR) * sizeof(uint16_t);
  packed.data = std::static_pointer_cast<uint16_t>(cpu_allocator().allocate(packed.bytes));
  uint16_t* out = packed.data.get();
  parallel_for(panels, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      uint16_t* panel = out + p * pairs * kNR;
      const int64_t j0 = p * kNR, cols = std::min(kNR, n - j0);
      std::memset(panel, 0, static_cast<size_t>(pairs * kNR) * sizeof(uint16_t));
      for (int64_t j = 0; j < cols; ++j) {
        const int8_t* row = q + (j0 + j) * k;
        for (int64_t t = 0; t < pairs; ++t) {
          const uint16_t lo = static_cast<uint8_t>(row[2 * t]);
          const uint16_t hi = 2 * t + 1 < k ? static_cast<uint8_t>(row[2 * t + 1]) : 0u;
          panel[t * kNR + j] = static_cast<uint16_t>(lo | (hi << 8));
        }
      }
    }
  });
  return packed;
}

void packed_int8_rows(int64_t m, const int32_t* ids, const PackedInt8& w, const float* scales,
                      float* out) {
  const int64_t k = w.k, pairs = (k + 1) / 2;
  const uint16_t* data = w.data.get();
  parallel_for(m, std::max<int64_t>(1, (int64_t{1} << 14) / k), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t id = ids[r];
      const uint16_t* col = data + (id / kNR) * pairs * kNR + id % kNR;  // channel id's pairs
      const float s = scales[id];
      float* row = out + r * k;
      for (int64_t q = 0; q < k; ++q) {
        const uint16_t pair = col[(q / 2) * kNR];
        const auto v = static_cast<int8_t>(q % 2 == 0 ? pair & 0xff : pair >> 8);
        row[q] = static_cast<float>(v) * s;
      }
    }
  });
}

void packed_int8_linear_forward(int64_t m, const float* x, const PackedInt8& w, const float* scales,
                                const int32_t* sums, const float* bias, Activation post, float* y) {
  TFM_CHECK(m >= 0) << "packed_int8_linear_forward: negative row count " << m;
  if (m == 0) return;
  TFM_CHECK(w.data != nullptr) << "packed_int8_linear_forward: weights not packed";
  const int64_t k = w.k, pairs = (k + 1) / 2;
  // Per-thread scratch that grows to the largest call and stays: no allocation in steady state.
  thread_local std::vector<uint8_t> q8;
  thread_local std::vector<uint16_t> q16;
  thread_local std::vector<float> row_scale;
  thread_local std::vector<int32_t> row_zero;
  if (q8.size() < static_cast<size_t>(m * k)) q8.resize(m * k);
  if (q16.size() < static_cast<size_t>(m * 2 * pairs)) q16.resize(m * 2 * pairs);
  if (row_scale.size() < static_cast<size_t>(m)) {
    row_scale.resize(m);
    row_zero.resize(m);
  }
  quantize_rows_u8(m, k, x, q8.data(), row_scale.data(), row_zero.data());
  // u8 values widened to 16 bits: 32-bit word t of a row is the pair (x[2t], x[2t + 1]) that one
  // vpmaddwd lane multiplies with a weight pair.
  const int64_t kp = 2 * pairs;
  for (int64_t i = 0; i < m; ++i) {
    const uint8_t* src = q8.data() + i * k;
    uint16_t* dst = q16.data() + i * kp;
#pragma omp simd
    for (int64_t j = 0; j < k; ++j) dst[j] = src[j];
    if (k < kp) dst[k] = 0;
  }
  const Int8Scales s{row_scale.data(), row_zero.data(), scales, sums};
  const TileArgs a{pairs, q16.data(), pairs, bias, post, y, w.n, &s};
  panels::run_all_panels<Int8Avx2>(m, w.n, k, a, w.data.get());
}

}  // namespace tfm::cpu
