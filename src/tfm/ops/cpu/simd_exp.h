// The f32 exp every elementwise kernel shares (softmax family, cross entropy, GELU).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tfm::cpu {

// exp that GCC can vectorise: std::exp stops `omp simd` loops from vectorising without
// -ffast-math (errno), so the f32 kernels use this Cephes-style expf instead (range reduction by
// ln 2 split in two, degree-5 polynomial; within 2 ulp of expf). Arguments below -86 give 0 (the
// true value is under 5e-38, far below anything a softmax resolves next to its largest term,
// whose exp argument is 0); above 88.72 give inf; NaN stays NaN.
inline float simd_exp(float x) {
  constexpr float kLo = -86.0f, kHi = 88.7228390f;
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  // Comparisons written so that NaN falls through unchanged.
  float xc = x > kHi ? kHi : x;
  xc = xc < kLo ? kLo : xc;
  const float t = xc * 1.44269504088896341f + kMagic;
  const float k = t - kMagic;       // round(x / ln 2), in [-124, 128]
  float r = xc - k * 0.693359375f;  // ln 2 = 0.693359375 - 2.12194440e-4,
  r = r - k * -2.12194440e-4f;      // the first part exact in k * it
  const float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * z + r + 1.0f;
  // 2^k built in the exponent field, as 2^(k-1) * 2 so that k = 128 does not overflow it. Out
  // of range, the factor becomes 0 or inf: integer selects only, so the compiler can if-convert
  // (and vectorise) them, which it will not do for a select that guards a trapping float op.
  const int32_t ki = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(kMagic);
  const int32_t bits = x < kLo ? 0 : (x > kHi ? 0x7f800000 : (ki + 126) << 23);
  return p * std::bit_cast<float>(bits) * 2.0f;
}
// f64 is the reference type: exact libm exp, speed does not matter.
inline double simd_exp(double x) {
  return std::exp(x);
}

}  // namespace tfm::cpu
