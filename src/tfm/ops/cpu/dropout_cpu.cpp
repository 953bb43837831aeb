#include "tfm/ops/cpu/dropout_cpu.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tfm/core/check.h"
#include "tfm/core/cpu_isa.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/philox_cpu.h"

// GCC 12 warns about the deliberately undefined registers inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace tfm::cpu {

namespace {

constexpr int64_t kGrainBlocks = 1 << 12;  // Philox blocks (4 elements each) per task

// out[l] = x[l] · scale where (w[l] >> 8) >= threshold, else 0, for 32 elements: the select the
// compiler kept scalar, by hand at each level.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
void select32_avx512(const uint32_t* w, uint32_t threshold, float scale, const float* x,
                     float* out) {
  const __m512i thr = _mm512_set1_epi32(static_cast<int>(threshold));
  const __m512 sc = _mm512_set1_ps(scale);
  for (int v = 0; v < 2; ++v) {
    const __m512i words = _mm512_loadu_si512(w + 16 * v);
    const __mmask16 keep = _mm512_cmpge_epu32_mask(_mm512_srli_epi32(words, 8), thr);
    _mm512_storeu_ps(out + 16 * v, _mm512_maskz_mul_ps(keep, _mm512_loadu_ps(x + 16 * v), sc));
  }
}
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma")
void select32_avx2(const uint32_t* w, uint32_t threshold, float scale, const float* x, float* out) {
  // w >> 8 and the threshold (at most 2^24) are non-negative as signed words, so a signed
  // greater-than against threshold - 1 is the unsigned >=.
  const __m256i below = _mm256_set1_epi32(static_cast<int>(threshold) - 1);
  const __m256 sc = _mm256_set1_ps(scale);
  for (int v = 0; v < 4; ++v) {
    const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 8 * v));
    const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_srli_epi32(words, 8), below));
    _mm256_storeu_ps(out + 8 * v,
                     _mm256_and_ps(keep, _mm256_mul_ps(_mm256_loadu_ps(x + 8 * v), sc)));
  }
}
#pragma GCC pop_options

// Philox blocks [b0, b1) of n elements: eight blocks (32 elements) at a time, vectorised; the
// words are those of stream.block(b), so the mask is the same as element by element. Always
// inlined, so the AVX-512 copy below compiles its own Philox rounds (64-bit lanes in zmm).
template <typename T, class Select>
[[gnu::always_inline]] inline void apply_blocks(int64_t b0, int64_t b1, int64_t n, const T* x,
                                                uint64_t seed, uint64_t id, uint32_t threshold,
                                                T scale, T* out, Select select32) {
  uint32_t w[32];
  for (int64_t b = b0; b < b1; b += 8) {
    philox_words_x8(static_cast<uint64_t>(b), seed, id, w);
    const int64_t base = 4 * b;
    const int64_t m = std::min<int64_t>({32, n - base, 4 * (b1 - b)});
    if constexpr (std::is_same_v<T, float>) {
      if (m == 32) {
        select32(w, threshold, scale, x + base, out + base);
        continue;
      }
    }
    for (int64_t l = 0; l < m; ++l)
      out[base + l] = (w[l] >> 8) >= threshold ? x[base + l] * scale : T(0);
  }
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl")
void apply_blocks_avx512(int64_t b0, int64_t b1, int64_t n, const float* x, uint64_t seed,
                         uint64_t id, uint32_t threshold, float scale, float* out) {
  apply_blocks(b0, b1, n, x, seed, id, threshold, scale, out, select32_avx512);
}
#pragma GCC pop_options

}  // namespace

template <typename T>
void dropout_apply(int64_t n, const T* x, const RandomStream& stream, double p, T* out,
                   CpuIsa isa) {
  TFM_CHECK(isa <= cpu_isa()) << "dropout_apply: level " << cpu_isa_name(isa)
                              << " is above this process's " << cpu_isa_name(cpu_isa());
  // stream.uniform(i) is m / 2^24 with m the top 24 bits of word i, and p * 2^24 is exact, so
  // uniform(i) >= p  <=>  m >= ceil(p * 2^24): an integer test with the very same outcome.
  const uint32_t threshold = dropout_threshold(p);
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  const int64_t blocks = (n + 3) / 4;
  const uint64_t seed = stream.seed(), id = stream.id();
  const bool avx512 = std::is_same_v<T, float> && isa >= CpuIsa::avx512;
  parallel_for(blocks, kGrainBlocks, [&](int64_t b0, int64_t b1) {
    if constexpr (std::is_same_v<T, float>)
      if (avx512) return apply_blocks_avx512(b0, b1, n, x, seed, id, threshold, scale, out);
    apply_blocks(b0, b1, n, x, seed, id, threshold, scale, out, select32_avx2);
  });
}

template void dropout_apply<float>(int64_t, const float*, const RandomStream&, double, float*,
                                   CpuIsa);
template void dropout_apply<double>(int64_t, const double*, const RandomStream&, double, double*,
                                    CpuIsa);

}  // namespace tfm::cpu
