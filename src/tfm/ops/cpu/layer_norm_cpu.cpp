#include "tfm/ops/cpu/layer_norm_cpu.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tfm/core/parallel.h"

namespace tfm::cpu {

namespace {

// Rows per parallel task: enough elements that a task outweighs its scheduling.
int64_t row_grain(int64_t c) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(c, 1));
}

// Rows per dgamma/dbeta partial sum. A constant, never derived from the thread count, so the
// column sums are the same bits however the chunks are spread over threads.
constexpr int64_t kRowsPerChunk = 32;

// The mean split into hi + lo parts of type T: (x - hi) - lo is then nearly exact for f32 even
// when |mean| >> std (x - hi is exact by Sterbenz once x is within a factor 2 of hi).
template <typename T>
struct RowScale {
  T mean_hi, mean_lo, rstd;
  RowScale(double mean, double r)
      : mean_hi(static_cast<T>(mean)),
        mean_lo(static_cast<T>(mean - static_cast<double>(static_cast<T>(mean)))),
        rstd(static_cast<T>(r)) {}
};

// Biased variance by a second pass over the (cache-resident) row: unlike E[x²] - mean², it
// does not cancel catastrophically when the mean is large.
template <typename T>
void finish_stats(int64_t c, const T* x, double sum, double eps, double& mean, double& rstd) {
  const double m = sum / static_cast<double>(c);
  double ss = 0;
#pragma omp simd reduction(+ : ss)
  for (int64_t j = 0; j < c; ++j) {
    const double d = static_cast<double>(x[j]) - m;
    ss += d * d;
  }
  mean = m;
  rstd = 1.0 / std::sqrt(ss / static_cast<double>(c) + eps);
}

template <typename T>
void normalize_row(int64_t c, const T* x, const RowScale<T>& s, const T* gamma, const T* beta,
                   T* y) {
  const T hi = s.mean_hi, lo = s.mean_lo, r = s.rstd;
#pragma omp simd
  for (int64_t j = 0; j < c; ++j) y[j] = ((x[j] - hi) - lo) * r * gamma[j] + beta[j];
}

// Σ g and Σ g * xhat over one row, g = dy * gamma, in double. A function of its own: written
// inline in the chunk lambda, GCC 12 vectorised this reduction with gathers, several times
// slower.
template <typename T>
void row_sums(int64_t c, const T* x, const T* dy, const T* gamma, const RowScale<T>& s,
              double& sum_g, double& sum_gx) {
  const T hi = s.mean_hi, lo = s.mean_lo, r = s.rstd;
  double sg = 0, sgx = 0;
#pragma omp simd reduction(+ : sg, sgx)
  for (int64_t j = 0; j < c; ++j) {
    const T xh = ((x[j] - hi) - lo) * r;
    const T g = dy[j] * gamma[j];
    sg += static_cast<double>(g);
    sgx += static_cast<double>(g * xh);
  }
  sum_g = sg;
  sum_gx = sgx;
}

// One row of dx = rstd * (dy * gamma - a - xhat * b) (+ extra), with xhat recomputed rather than
// stored, and, when kParams, its terms of the column partials. Compile-time variants keep the
// loop free of per-element branches.
template <bool kParams, bool kExtra, typename T>
void dx_row(int64_t c, const T* x, const T* dy, const T* gamma, const T* extra,
            const RowScale<T>& s, T a, T b, T* dx, T* pg, T* pb) {
  const T hi = s.mean_hi, lo = s.mean_lo, r = s.rstd;
#pragma omp simd
  for (int64_t j = 0; j < c; ++j) {
    const T xh = ((x[j] - hi) - lo) * r;
    T d = r * (dy[j] * gamma[j] - a - xh * b);
    if constexpr (kExtra) d += extra[j];
    dx[j] = d;
    if constexpr (kParams) {
      pg[j] += dy[j] * xh;
      pb[j] += dy[j];
    }
  }
}

}  // namespace

template <typename T>
void layer_norm_forward(int64_t n, int64_t c, const T* x, const T* gamma, const T* beta, double eps,
                        T* y, double* mean, double* rstd) {
  parallel_for(n, row_grain(c), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* xi = x + i * c;
      double s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t j = 0; j < c; ++j) s += static_cast<double>(xi[j]);
      finish_stats(c, xi, s, eps, mean[i], rstd[i]);
      normalize_row(c, xi, RowScale<T>(mean[i], rstd[i]), gamma, beta, y + i * c);
    }
  });
}

template <typename T>
void add_layer_norm_forward(int64_t n, int64_t c, const T* x, const T* residual, const T* gamma,
                            const T* beta, double eps, T* sum, T* y, double* mean, double* rstd) {
  parallel_for(n, row_grain(c), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* xi = x + i * c;
      const T* ri = residual + i * c;
      T* si = sum + i * c;
      double s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t j = 0; j < c; ++j) {
        const T v = xi[j] + ri[j];
        si[j] = v;
        s += static_cast<double>(v);
      }
      finish_stats(c, si, s, eps, mean[i], rstd[i]);
      normalize_row(c, si, RowScale<T>(mean[i], rstd[i]), gamma, beta, y + i * c);
    }
  });
}

int64_t layer_norm_backward_workspace(int64_t n, int64_t c) {
  return 2 * ((n + kRowsPerChunk - 1) / kRowsPerChunk) * c;
}

template <typename T>
void layer_norm_backward(int64_t n, int64_t c, const T* dy, const T* x, const double* mean,
                         const double* rstd, const T* gamma, const T* dx_extra, T* dx, T* dgamma,
                         T* dbeta, T* workspace) {
  const bool want_params = dgamma != nullptr && dbeta != nullptr;
  if (dx == nullptr && !want_params) return;
  const int64_t chunks = (n + kRowsPerChunk - 1) / kRowsPerChunk;
  // (chunks, C) partial column sums each; chunk k writes only row k of them.
  T* const part_g = want_params ? workspace : nullptr;
  T* const part_b = want_params ? workspace + chunks * c : nullptr;
  const double inv_c = 1.0 / static_cast<double>(c);
  const int64_t chunk_grain = std::max<int64_t>(1, row_grain(c) / kRowsPerChunk);

  parallel_for(chunks, chunk_grain, [&](int64_t cb, int64_t ce) {
    for (int64_t k = cb; k < ce; ++k) {
      T* pg = want_params ? part_g + k * c : nullptr;
      T* pb = want_params ? part_b + k * c : nullptr;
      if (want_params) {
        std::fill(pg, pg + c, T(0));
        std::fill(pb, pb + c, T(0));
      }
      const int64_t row_end = std::min(n, (k + 1) * kRowsPerChunk);
      for (int64_t i = k * kRowsPerChunk; i < row_end; ++i) {
        const T* xi = x + i * c;
        const T* dyi = dy + i * c;
        const RowScale<T> s(mean[i], rstd[i]);
        const T hi = s.mean_hi, lo = s.mean_lo, r = s.rstd;
        if (dx == nullptr) {
#pragma omp simd
          for (int64_t j = 0; j < c; ++j) {
            pg[j] += dyi[j] * (((xi[j] - hi) - lo) * r);
            pb[j] += dyi[j];
          }
          continue;
        }
        double sg = 0, sgx = 0;
        row_sums(c, xi, dyi, gamma, s, sg, sgx);
        const T a = static_cast<T>(sg * inv_c);
        const T b = static_cast<T>(sgx * inv_c);
        const T* ei = dx_extra != nullptr ? dx_extra + i * c : nullptr;
        T* dxi = dx + i * c;
        if (want_params) {
          if (ei != nullptr) {
            dx_row<true, true>(c, xi, dyi, gamma, ei, s, a, b, dxi, pg, pb);
          } else {
            dx_row<true, false>(c, xi, dyi, gamma, ei, s, a, b, dxi, pg, pb);
          }
        } else {
          if (ei != nullptr) {
            dx_row<false, true>(c, xi, dyi, gamma, ei, s, a, b, dxi, pg, pb);
          } else {
            dx_row<false, false>(c, xi, dyi, gamma, ei, s, a, b, dxi, pg, pb);
          }
        }
      }
    }
  });

  if (!want_params) return;
  // Column sums of the partials, chunk by chunk in order, in double.
  parallel_for(c, 1024, [&](int64_t jb, int64_t je) {
    std::vector<double> ag(je - jb, 0.0), ab(je - jb, 0.0);
    for (int64_t k = 0; k < chunks; ++k) {
      const T* pg = part_g + k * c;
      const T* pb = part_b + k * c;
#pragma omp simd
      for (int64_t j = jb; j < je; ++j) {
        ag[j - jb] += static_cast<double>(pg[j]);
        ab[j - jb] += static_cast<double>(pb[j]);
      }
    }
    for (int64_t j = jb; j < je; ++j) {
      dgamma[j] = static_cast<T>(ag[j - jb]);
      dbeta[j] = static_cast<T>(ab[j - jb]);
    }
  });
}

#define TFM_INSTANTIATE(T)                                                                        \
  template void layer_norm_forward<T>(int64_t, int64_t, const T*, const T*, const T*, double, T*, \
                                      double*, double*);                                          \
  template void add_layer_norm_forward<T>(int64_t, int64_t, const T*, const T*, const T*,         \
                                          const T*, double, T*, T*, double*, double*);            \
  template void layer_norm_backward<T>(int64_t, int64_t, const T*, const T*, const double*,       \
                                       const double*, const T*, const T*, T*, T*, T*, T*);
TFM_INSTANTIATE(float)
TFM_INSTANTIATE(double)
#undef TFM_INSTANTIATE

}  // namespace tfm::cpu
