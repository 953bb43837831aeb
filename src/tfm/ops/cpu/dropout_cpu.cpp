#include "tfm/ops/cpu/dropout_cpu.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/philox_cpu.h"

// GCC 12 warns about the deliberately undefined registers inside its own AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tfm::cpu {

namespace {
constexpr int64_t kGrainBlocks = 1 << 12;  // Philox blocks (4 elements each) per task
}

template <typename T>
void dropout_apply(int64_t n, const T* x, const RandomStream& stream, double p, T* out) {
  // stream.uniform(i) is m / 2^24 with m the top 24 bits of word i, and p * 2^24 is exact, so
  // uniform(i) >= p  <=>  m >= ceil(p * 2^24): an integer test with the very same outcome.
  const uint32_t threshold = dropout_threshold(p);
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  const int64_t blocks = (n + 3) / 4;
  const uint64_t seed = stream.seed(), id = stream.id();
  parallel_for(blocks, kGrainBlocks, [&](int64_t b0, int64_t b1) {
    uint32_t w[32];
    // Eight Philox blocks (32 elements) at a time, vectorised; the words are those of
    // stream.block(b), so the mask is the same as element by element.
    for (int64_t b = b0; b < b1; b += 8) {
      philox_words_x8(static_cast<uint64_t>(b), seed, id, w);
      const int64_t base = 4 * b;
      const int64_t m = std::min<int64_t>({32, n - base, 4 * (b1 - b)});
#ifdef __AVX512F__
      if constexpr (std::is_same_v<T, float>) {
        if (m == 32) {  // the compiler kept the select scalar
          const __m512i thr = _mm512_set1_epi32(static_cast<int>(threshold));
          const __m512 sc = _mm512_set1_ps(scale);
          for (int v = 0; v < 2; ++v) {
            const __m512i words = _mm512_loadu_si512(w + 16 * v);
            const __mmask16 keep = _mm512_cmpge_epu32_mask(_mm512_srli_epi32(words, 8), thr);
            const __m512 xv = _mm512_loadu_ps(x + base + 16 * v);
            _mm512_storeu_ps(out + base + 16 * v, _mm512_maskz_mul_ps(keep, xv, sc));
          }
          continue;
        }
      }
#endif
      for (int64_t l = 0; l < m; ++l)
        out[base + l] = (w[l] >> 8) >= threshold ? x[base + l] * scale : T(0);
    }
  });
}

template void dropout_apply<float>(int64_t, const float*, const RandomStream&, double, float*);
template void dropout_apply<double>(int64_t, const double*, const RandomStream&, double, double*);

}  // namespace tfm::cpu
