#include "tfm/ops/cpu/decode_steps_cpu.h"

#include <immintrin.h>

#include <limits>

namespace tfm::cpu {
namespace {

// top_k_row's scan; with Check, also whether every value is below +inf and not NaN (two more
// compares a block, where the block's loads are the cost).
template <bool Check>
bool top_k_scan(const float* row, int64_t v, int64_t k, int32_t* ids, float* vals) {
  if (k <= 0) return true;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  bool finite = true;  // below +inf and not NaN, the scalar part's values
  int64_t n = 0;       // kept so far, ids[0, n) in order
  auto offer = [&](int32_t i) {
    const float x = row[i];
    if constexpr (Check) finite &= x < kInf;
    const bool full = n == k;
    if (full && !(x > vals[n - 1])) return;
    // After every kept value >= x: equal values keep the lower id first.
    int64_t p = n;
    while (p > 0 && vals[p - 1] < x) --p;
    const int64_t last = full ? k - 1 : n;  // the slot that is overwritten by the shift
    for (int64_t j = last; j > p; --j) {
      ids[j] = ids[j - 1];
      vals[j] = vals[j - 1];
    }
    ids[p] = i;
    vals[p] = x;
    if (!full) ++n;
  };
  constexpr int64_t kBlock = 16;
  int64_t i = 0;
  for (; i < v && n < k; ++i) offer(static_cast<int32_t>(i));
  // Two ymm compares a block (AVX2 is the library's floor): GCC left the `any |=` loop as 16
  // scalar compares: 0.94 ns a value against 0.29 (bench_search_steps, V = 8000, Zen 2). NaN
  // compares false, as in offer.
  const __m256 inf = _mm256_set1_ps(kInf);
  __m256 bad = _mm256_setzero_ps();  // Check: lanes that held NaN or +inf
  for (; i + kBlock <= v; i += kBlock) {
    const __m256 worst = _mm256_set1_ps(vals[k - 1]);
    const __m256 x0 = _mm256_loadu_ps(row + i), x1 = _mm256_loadu_ps(row + i + 8);
    if constexpr (Check) {  // !(x < inf): NaN (unordered) or +inf
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(x0, inf, _CMP_NLT_UQ));
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(x1, inf, _CMP_NLT_UQ));
    }
    const __m256 a = _mm256_cmp_ps(x0, worst, _CMP_GT_OQ);
    const __m256 b = _mm256_cmp_ps(x1, worst, _CMP_GT_OQ);
    if (_mm256_movemask_ps(_mm256_or_ps(a, b)) != 0)
      for (int64_t j = 0; j < kBlock; ++j) offer(static_cast<int32_t>(i + j));
  }
  for (; i < v; ++i) offer(static_cast<int32_t>(i));
  return finite && _mm256_movemask_ps(bad) == 0;
}

}  // namespace

void top_k_row(const float* row, int64_t v, int64_t k, int32_t* ids, float* vals) {
  top_k_scan<false>(row, v, k, ids, vals);
}

bool top_k_row_finite(const float* row, int64_t v, int64_t k, int32_t* ids, float* vals) {
  return top_k_scan<true>(row, v, k, ids, vals);
}

}  // namespace tfm::cpu
