#include "tfm/ops/cpu/adam_cpu.h"

#include <immintrin.h>

#include <cmath>

namespace tfm::cpu {

namespace {

// Elements [i0, n) one by one: the contract of adam_cpu.h with std::fma (an FMA instruction on
// x86-64-v3). std::sqrt keeps this loop scalar (errno), which is why the bulk is vectorised by
// hand below.
void adam_update_scalar(const AdamUpdate& a, int64_t i0, int64_t n, float* p, const float* g,
                        float* m, float* v) {
  for (int64_t i = i0; i < n; ++i) {
    const float gg = g[i] * a.grad_scale;
    const float gi = a.coupled_wd ? std::fma(a.weight_decay, p[i], gg) : gg;
    m[i] = std::fma(a.beta1, m[i], (1.0f - a.beta1) * gi);
    v[i] = std::fma(a.beta2, v[i], (1.0f - a.beta2) * gi * gi);
    const float denom = std::fma(std::sqrt(v[i]), a.inv_sqrt_bc2, a.eps);
    p[i] = std::fma(p[i], a.decay, -(a.step_size * m[i] / denom));
  }
}

// The same, eight elements at a time; returns how many it did (a multiple of 8).
#pragma GCC push_options
#pragma GCC target("avx2,fma")
int64_t adam_update_avx2(const AdamUpdate& a, int64_t n, float* p, const float* g, float* m,
                         float* v) {
  const __m256 gs = _mm256_set1_ps(a.grad_scale), wd = _mm256_set1_ps(a.weight_decay);
  const __m256 b1 = _mm256_set1_ps(a.beta1), c1 = _mm256_set1_ps(1.0f - a.beta1);
  const __m256 b2 = _mm256_set1_ps(a.beta2), c2 = _mm256_set1_ps(1.0f - a.beta2);
  const __m256 inv = _mm256_set1_ps(a.inv_sqrt_bc2), eps = _mm256_set1_ps(a.eps);
  const __m256 step = _mm256_set1_ps(a.step_size), decay = _mm256_set1_ps(a.decay);
  const int64_t n8 = n / 8 * 8;
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 pi = _mm256_loadu_ps(p + i);
    __m256 gi = _mm256_mul_ps(_mm256_loadu_ps(g + i), gs);
    if (a.coupled_wd) gi = _mm256_fmadd_ps(wd, pi, gi);
    const __m256 mi = _mm256_fmadd_ps(b1, _mm256_loadu_ps(m + i), _mm256_mul_ps(c1, gi));
    const __m256 vi =
        _mm256_fmadd_ps(b2, _mm256_loadu_ps(v + i), _mm256_mul_ps(_mm256_mul_ps(c2, gi), gi));
    const __m256 denom = _mm256_fmadd_ps(_mm256_sqrt_ps(vi), inv, eps);
    const __m256 q = _mm256_div_ps(_mm256_mul_ps(step, mi), denom);
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    _mm256_storeu_ps(p + i, _mm256_fmsub_ps(pi, decay, q));  // fma(p, decay, -q)
  }
  return n8;
}
#pragma GCC pop_options

}  // namespace

void adam_update(const AdamUpdate& a, int64_t n, float* p, const float* g, float* m, float* v) {
  const int64_t done = adam_update_avx2(a, n, p, g, m, v);
  adam_update_scalar(a, done, n, p, g, m, v);
}

}  // namespace tfm::cpu
