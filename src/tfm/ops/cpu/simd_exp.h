// The f32 exp every elementwise kernel shares (softmax family, cross entropy, GELU).
#pragma once

#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

// exp_f32 on the attention tiles' 64-byte vectors: always inlined, never across an ABI boundary.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace tfm::cpu {

// The one f32 exp of tfm, for a float (V = float, I = int32_t) or a GCC vector of floats with
// its int32 vector (the attention tiles' Vec<float>): the scalar form is what GCC vectorises in
// `omp simd` loops (std::exp stops them from vectorising without -ffast-math, for errno), the
// vector form what the attention tiles call; one definition, so softmax, cross entropy, GELU and
// attention round alike. Cephes-style: range reduction by ln 2 split in two, degree-5
// polynomial; within 2 ulp of expf. Arguments below -86 give 0 (the true value is under 5e-38,
// far below anything a softmax resolves next to its largest term, whose exp argument is 0), so
// -inf gives 0; above 88.72 give inf; NaN stays NaN.
template <typename V, typename I>
[[gnu::always_inline]] inline V exp_f32(V x) {
  constexpr float kLo = -86.0f, kHi = 88.7228390f;
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const V lo = V{} + kLo, hi = V{} + kHi, magic = V{} + kMagic;
  // Comparisons written so that NaN falls through unchanged.
  V xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  const V t = xc * 1.44269504088896341f + magic;
  const V k = t - magic;        // round(x / ln 2), in [-124, 128]
  V r = xc - k * 0.693359375f;  // ln 2 = 0.693359375 - 2.12194440e-4,
  r = r - k * -2.12194440e-4f;  // the first part exact in k * it
  const V z = r * r;
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * z + r + 1.0f;
  // 2^k built in the exponent field, as 2^(k-1) * 2 so that k = 128 does not overflow it. Out
  // of range, the factor becomes 0 or inf: integer selects only, so the compiler can if-convert
  // (and vectorise) them, which it will not do for a select that guards a trapping float op.
  const I ki = std::bit_cast<I>(t) - std::bit_cast<I>(magic);
  const I zero = I{}, inf = I{} + 0x7f800000;
  const I bits = x < lo ? zero : (x > hi ? inf : (ki + 126) << 23);
  return p * std::bit_cast<V>(bits) * 2.0f;
}
inline float simd_exp(float x) {
  return exp_f32<float, int32_t>(x);
}
// f64 is the reference type: exact libm exp, speed does not matter.
inline double simd_exp(double x) {
  return std::exp(x);
}

// Σ_j exp(x[j] - m) over a row of n floats, summed in double (rows of thousands of terms drift by
// ~1e-6 in f32), and y[j] = exp(x[j] - m) when Store. Written with explicit 8-lane vectors
// because GCC left the `omp simd` form of this loop scalar in the x86-64-v3 build (the float to
// double widening inside a reduction): that made log_softmax 11 % of a beam search on AVX2.
// Each lane sums its own terms, four per double accumulator, then the lanes are added.
// The widening is `vcvtps2pd` on each 4-lane half (AVX, below the library's AVX2 floor): GCC's
// generic vector conversion came out as 2-lane pieces and shuffles: 1.20 ns a value against 1.05
// (bench/bench_search_steps.cpp, Zen 2), for the same sums (tests/ops/test_softmax.cpp).
template <bool Store>
inline double exp_shifted_sum_f64(const float* x, int64_t n, float m, float* y = nullptr) {
  typedef float F8 __attribute__((vector_size(32)));
  typedef int32_t I8 __attribute__((vector_size(32)));
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    F8 v;
    __builtin_memcpy(&v, x + j, sizeof v);
    const F8 e = exp_f32<F8, I8>(v - m);
    if constexpr (Store) __builtin_memcpy(y + j, &e, sizeof e);
    const __m256 ev = static_cast<__m256>(e);
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(ev)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(ev, 1)));
  }
  double s = 0;
  for (; j < n; ++j) {
    const float e = simd_exp(x[j] - m);
    if constexpr (Store) y[j] = e;
    s += static_cast<double>(e);
  }
  alignas(32) double t[4];
  _mm256_store_pd(t, _mm256_add_pd(lo, hi));
  return s + ((t[0] + t[1]) + (t[2] + t[3]));
}
// The f64 reference rows: plain loops.
template <bool Store>
inline double exp_shifted_sum_f64(const double* x, int64_t n, double m, double* y = nullptr) {
  double s = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double e = std::exp(x[j] - m);
    if constexpr (Store) y[j] = e;
    s += e;
  }
  return s;
}

}  // namespace tfm::cpu
