// gemm and gemm_batched (primitives.h): f32 on oneDNN's sgemm, f64 on a reference loop.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <vector>

#include "tfm/core/check.h"
#include "tfm/core/parallel.h"
#include "tfm/core/signal_stack.h"
#include "tfm/ops/cpu/dnnl_context.h"
#include "tfm/ops/cpu/primitives.h"

namespace tfm::cpu {

namespace {

void check_gemm_args(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                     int64_t ldc) {
  TFM_CHECK(m >= 0 && n >= 0 && k >= 0)
      << "gemm: negative size m=" << m << " n=" << n << " k=" << k;
  TFM_CHECK(lda >= std::max<int64_t>(1, ta ? m : k) && ldb >= std::max<int64_t>(1, tb ? k : n) &&
            ldc >= std::max<int64_t>(1, n))
      << "gemm: leading dimensions too small (m=" << m << " n=" << n << " k=" << k << " lda=" << lda
      << " ldb=" << ldb << " ldc=" << ldc << ")";
}

// Reference-quality f64 GEMM: i-k-j loop order so the inner loop streams rows of B and C.
void gemm_f64(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
              int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  parallel_for(m, 16, [&](int64_t i0, int64_t i1) {
    std::vector<double> row(n);
    for (int64_t i = i0; i < i1; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int64_t p = 0; p < k; ++p) {
        const double av = ta ? a[p * lda + i] : a[i * lda + p];
        if (av == 0.0) continue;
        if (tb) {
          for (int64_t j = 0; j < n; ++j) row[j] += av * b[j * ldb + p];
        } else {
          const double* br = b + p * ldb;
          for (int64_t j = 0; j < n; ++j) row[j] += av * br[j];
        }
      }
      double* cr = c + i * ldc;
      for (int64_t j = 0; j < n; ++j) cr[j] = alpha * row[j] + (beta == 0.0 ? 0.0 : beta * cr[j]);
    }
  });
}

}  // namespace

template <>
void gemm<float>(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  check_gemm_args(ta, tb, m, n, k, lda, ldb, ldc);
  init_onednn_isa();
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    return;
  }
  ensure_signal_stacks();  // its JIT kernels move rsp into the heap (core/signal_stack.h)
  const dnnl_status_t st =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  TFM_CHECK(st == dnnl_success) << "dnnl_sgemm failed with status " << static_cast<int>(st)
                                << " (m=" << m << " n=" << n << " k=" << k << ")";
}

template <>
void gemm<double>(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                  int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  check_gemm_args(ta, tb, m, n, k, lda, ldb, ldc);
  gemm_f64(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <typename T>
void gemm_batched(bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k, T alpha,
                  const T* a, int64_t lda, int64_t sa, const T* b, int64_t ldb, int64_t sb, T beta,
                  T* c, int64_t ldc, int64_t sc) {
  TFM_CHECK(batch >= 0) << "gemm_batched: negative batch " << batch;
  // Below ~1 MFLOP per GEMM, threading inside oneDNN costs more than it gains: give each thread
  // whole GEMMs instead (oneDNN runs single-threaded inside an OpenMP region).
  const bool per_thread = batch > 1 && 2.0 * m * n * k < 1e6 * get_threads();
  if (per_thread) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < batch; ++i)
      gemm<T>(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc, ldc);
  } else {
    for (int64_t i = 0; i < batch; ++i)
      gemm<T>(ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc, ldc);
  }
}

template void gemm_batched<float>(bool, bool, int64_t, int64_t, int64_t, int64_t, float,
                                  const float*, int64_t, int64_t, const float*, int64_t, int64_t,
                                  float, float*, int64_t, int64_t);
template void gemm_batched<double>(bool, bool, int64_t, int64_t, int64_t, int64_t, double,
                                   const double*, int64_t, int64_t, const double*, int64_t, int64_t,
                                   double, double*, int64_t, int64_t);

}  // namespace tfm::cpu
