// The f32 exp every elementwise kernel shares (softmax family, cross entropy, GELU).
#pragma once

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
inline V exp_f32(V x) {
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

}  // namespace tfm::cpu
