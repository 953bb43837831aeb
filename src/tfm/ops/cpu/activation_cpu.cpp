#include "tfm/ops/cpu/activation_cpu.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/simd_exp.h"

namespace tfm::cpu {

namespace {

constexpr int64_t kGrain = 1 << 14;
constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// Φ(x) and φ(x) for f32. Φ comes from erfc(|x|/√2) (Abramowitz–Stegun 7.1.26), which shares
// e^{-x²/2} with φ; taking the tail as 0.5·erfc rather than 1 - ... avoids cancellation for x < 0.
inline void normal_cdf_pdf_f32(float x, float& cdf, float& pdf) {
  const float z = std::abs(x) * static_cast<float>(kSqrt1_2);
  const float t = 1.0f / (1.0f + 0.3275911f * z);
  float poly = 1.061405429f;
  poly = poly * t - 1.453152027f;
  poly = poly * t + 1.421413741f;
  poly = poly * t - 0.284496736f;
  poly = poly * t + 0.254829592f;
  poly = poly * t;
  const float e = simd_exp(-0.5f * x * x);
  const float half_erfc = 0.5f * poly * e;  // P(N > |x|)
  cdf = x >= 0.0f ? 1.0f - half_erfc : half_erfc;
  pdf = e * static_cast<float>(kInvSqrt2Pi);
}

inline void normal_cdf_pdf(float x, float& cdf, float& pdf) {
  normal_cdf_pdf_f32(x, cdf, pdf);
}

inline void normal_cdf_pdf(double x, double& cdf, double& pdf) {
  cdf = 0.5 * std::erfc(-x * kSqrt1_2);
  pdf = std::exp(-0.5 * x * x) * kInvSqrt2Pi;
}

inline float normal_cdf(float x) {
  float cdf, pdf;
  normal_cdf_pdf_f32(x, cdf, pdf);
  return cdf;
}
inline double normal_cdf(double x) {
  return 0.5 * std::erfc(-x * kSqrt1_2);
}

}  // namespace

template <typename T>
void relu_forward_serial(int64_t n, const T* x, T* y) {
  // `x < 0 ? 0 : x` rather than max(x, 0): a NaN passes through instead of becoming 0.
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] < T(0) ? T(0) : x[i];
}

template <typename T>
void gelu_forward_serial(int64_t n, const T* x, T* y) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * normal_cdf(x[i]);
}

template <typename T>
void relu_forward(int64_t n, const T* x, T* y) {
  parallel_for(n, kGrain,
               [&](int64_t b, int64_t e) { relu_forward_serial<T>(e - b, x + b, y + b); });
}

template <typename T>
void relu_backward(int64_t n, const T* gy, const T* y, T* gx) {
  parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) {
      const T g = gy[i];  // loaded unconditionally so the select vectorises
      gx[i] = y[i] > T(0) ? g : T(0);
    }
  });
}

template <typename T>
void gelu_forward(int64_t n, const T* x, T* y) {
  // Transcendental work: a smaller grain than the memory-bound kernels still pays for a thread.
  parallel_for(n, kGrain / 4,
               [&](int64_t b, int64_t e) { gelu_forward_serial<T>(e - b, x + b, y + b); });
}

template <typename T>
void gelu_backward(int64_t n, const T* gy, const T* x, T* gx) {
  parallel_for(n, kGrain / 4, [&](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) {
      T cdf, pdf;
      normal_cdf_pdf(x[i], cdf, pdf);
      gx[i] = gy[i] * (cdf + x[i] * pdf);
    }
  });
}

#define TFM_INSTANTIATE(T)                                         \
  template void relu_forward<T>(int64_t, const T*, T*);            \
  template void relu_forward_serial<T>(int64_t, const T*, T*);     \
  template void gelu_forward_serial<T>(int64_t, const T*, T*);     \
  template void relu_backward<T>(int64_t, const T*, const T*, T*); \
  template void gelu_forward<T>(int64_t, const T*, T*);            \
  template void gelu_backward<T>(int64_t, const T*, const T*, T*);
TFM_INSTANTIATE(float)
TFM_INSTANTIATE(double)
#undef TFM_INSTANTIATE

}  // namespace tfm::cpu
