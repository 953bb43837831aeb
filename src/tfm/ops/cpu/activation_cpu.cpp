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

// σ(x) = 1 / (1 + e^-x); e^-x overflows to inf for x < -88, giving 0 as it should.
inline float sigmoid(float x) {
  return 1.0f / (1.0f + simd_exp(-x));
}
inline double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluTanhCubic = 0.044715;

// tanh(u) = 1 - 2 / (e^{2u} + 1): no overflow (e^{2u} = inf gives 1), and the exp vectorises.
inline float tanh_via_exp(float u) {
  return 1.0f - 2.0f / (simd_exp(2.0f * u) + 1.0f);
}
inline double tanh_via_exp(double u) {
  return std::tanh(u);
}

template <typename T>
inline T gelu_tanh_arg(T x) {
  return static_cast<T>(kSqrt2OverPi) * (x + static_cast<T>(kGeluTanhCubic) * x * x * x);
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
void silu_forward_serial(int64_t n, const T* x, T* y) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * sigmoid(x[i]);
}

template <typename T>
void gelu_tanh_forward_serial(int64_t n, const T* x, T* y) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = T(0.5) * x[i] * (T(1) + tanh_via_exp(gelu_tanh_arg(x[i])));
}

template <typename T>
void silu_forward(int64_t n, const T* x, T* y) {
  parallel_for(n, kGrain / 4,
               [&](int64_t b, int64_t e) { silu_forward_serial<T>(e - b, x + b, y + b); });
}

template <typename T>
void silu_backward(int64_t n, const T* gy, const T* x, T* gx) {
  parallel_for(n, kGrain / 4, [&](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) {
      const T s = sigmoid(x[i]);
      gx[i] = gy[i] * s * (T(1) + x[i] * (T(1) - s));
    }
  });
}

template <typename T>
void gelu_tanh_forward(int64_t n, const T* x, T* y) {
  parallel_for(n, kGrain / 4,
               [&](int64_t b, int64_t e) { gelu_tanh_forward_serial<T>(e - b, x + b, y + b); });
}

template <typename T>
void gelu_tanh_backward(int64_t n, const T* gy, const T* x, T* gx) {
  parallel_for(n, kGrain / 4, [&](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) {
      const T v = x[i], t = tanh_via_exp(gelu_tanh_arg(v));
      const T du = static_cast<T>(kSqrt2OverPi) * (T(1) + T(3 * kGeluTanhCubic) * v * v);
      gx[i] = gy[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du);
    }
  });
}

template <typename T>
void input_activation_serial(Activation act, int64_t n, const T* x, T* y) {
  if (act == Activation::gelu) gelu_forward_serial<T>(n, x, y);
  if (act == Activation::silu) silu_forward_serial<T>(n, x, y);
  if (act == Activation::gelu_tanh) gelu_tanh_forward_serial<T>(n, x, y);
}

template <typename T>
void input_activation_forward(Activation act, int64_t n, const T* x, T* y) {
  if (act == Activation::gelu) gelu_forward<T>(n, x, y);
  if (act == Activation::silu) silu_forward<T>(n, x, y);
  if (act == Activation::gelu_tanh) gelu_tanh_forward<T>(n, x, y);
}

template <typename T>
void input_activation_backward(Activation act, int64_t n, const T* gy, const T* x, T* gx) {
  if (act == Activation::gelu) gelu_backward<T>(n, gy, x, gx);
  if (act == Activation::silu) silu_backward<T>(n, gy, x, gx);
  if (act == Activation::gelu_tanh) gelu_tanh_backward<T>(n, gy, x, gx);
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

#define TFM_INSTANTIATE(T)                                                      \
  template void relu_forward<T>(int64_t, const T*, T*);                         \
  template void relu_forward_serial<T>(int64_t, const T*, T*);                  \
  template void gelu_forward_serial<T>(int64_t, const T*, T*);                  \
  template void relu_backward<T>(int64_t, const T*, const T*, T*);              \
  template void gelu_forward<T>(int64_t, const T*, T*);                         \
  template void gelu_backward<T>(int64_t, const T*, const T*, T*);              \
  template void silu_forward<T>(int64_t, const T*, T*);                         \
  template void silu_backward<T>(int64_t, const T*, const T*, T*);              \
  template void gelu_tanh_forward<T>(int64_t, const T*, T*);                    \
  template void gelu_tanh_backward<T>(int64_t, const T*, const T*, T*);         \
  template void silu_forward_serial<T>(int64_t, const T*, T*);                  \
  template void gelu_tanh_forward_serial<T>(int64_t, const T*, T*);             \
  template void input_activation_serial<T>(Activation, int64_t, const T*, T*);  \
  template void input_activation_forward<T>(Activation, int64_t, const T*, T*); \
  template void input_activation_backward<T>(Activation, int64_t, const T*, const T*, T*);
TFM_INSTANTIATE(float)
TFM_INSTANTIATE(double)
#undef TFM_INSTANTIATE

}  // namespace tfm::cpu
