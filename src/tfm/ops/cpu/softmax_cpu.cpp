#include "tfm/ops/cpu/softmax_cpu.h"

#include <algorithm>

#include "tfm/core/parallel.h"

namespace tfm::cpu {

namespace {

int64_t row_grain(int64_t c) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(c, 1));
}

template <typename T>
T row_max(int64_t c, const T* x) {
  T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < c; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

}  // namespace

template <typename T>
void softmax_forward(int64_t n, int64_t c, const T* x, T* y) {
  parallel_for(n, row_grain(c), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* xi = x + i * c;
      T* yi = y + i * c;
      const T m = row_max(c, xi);
      const double s = exp_shifted_sum_f64<true>(xi, c, m, yi);
      const T inv = static_cast<T>(1.0 / s);
#pragma omp simd
      for (int64_t j = 0; j < c; ++j) yi[j] *= inv;
    }
  });
}

template <typename T>
void softmax_backward(int64_t n, int64_t c, const T* dy, const T* y, T* dx) {
  parallel_for(n, row_grain(c), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* dyi = dy + i * c;
      const T* yi = y + i * c;
      T* dxi = dx + i * c;
      double dot = 0;
#pragma omp simd reduction(+ : dot)
      for (int64_t j = 0; j < c; ++j) dot += static_cast<double>(dyi[j] * yi[j]);
      const T d = static_cast<T>(dot);
#pragma omp simd
      for (int64_t j = 0; j < c; ++j) dxi[j] = yi[j] * (dyi[j] - d);
    }
  });
}

template <typename T>
void log_softmax_row(int64_t c, const T* x, T* y) {
  const T m = row_max(c, x);
  const double s = exp_shifted_sum_f64<false>(x, c, m);
  const T ls = static_cast<T>(std::log(s));
#pragma omp simd
  for (int64_t j = 0; j < c; ++j) y[j] = (x[j] - m) - ls;
}

template <typename T>
void log_softmax_forward(int64_t n, int64_t c, const T* x, T* y) {
  parallel_for(n, row_grain(c), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) log_softmax_row(c, x + i * c, y + i * c);
  });
}

template <typename T>
void log_softmax_backward(int64_t n, int64_t c, const T* dy, const T* y, T* dx) {
  parallel_for(n, row_grain(c), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* dyi = dy + i * c;
      const T* yi = y + i * c;
      T* dxi = dx + i * c;
      double s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t j = 0; j < c; ++j) s += static_cast<double>(dyi[j]);
      const T st = static_cast<T>(s);
#pragma omp simd
      for (int64_t j = 0; j < c; ++j) dxi[j] = dyi[j] - simd_exp(yi[j]) * st;
    }
  });
}

#define TFM_INSTANTIATE(T)                                                     \
  template void softmax_forward<T>(int64_t, int64_t, const T*, T*);            \
  template void softmax_backward<T>(int64_t, int64_t, const T*, const T*, T*); \
  template void log_softmax_forward<T>(int64_t, int64_t, const T*, T*);        \
  template void log_softmax_row<T>(int64_t, const T*, T*);                     \
  template void log_softmax_backward<T>(int64_t, int64_t, const T*, const T*, T*);
TFM_INSTANTIATE(float)
TFM_INSTANTIATE(double)
#undef TFM_INSTANTIATE

}  // namespace tfm::cpu
