#include "tfm/ops/cpu/cross_entropy_cpu.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "tfm/core/check.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/softmax_cpu.h"

namespace tfm::cpu {

namespace {

int64_t row_grain(int64_t v) {
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(v, 1));
}

struct RowResult {
  double loss, nll;
  bool kept, correct;
};

}  // namespace

template <typename T>
CrossEntropyTotals cross_entropy_forward(int64_t n, int64_t v, const T* logits,
                                         const int32_t* targets, int64_t ignore_index,
                                         double smoothing, T* row_max, T* row_logsum) {
  // Per-row results first, summed afterwards in row order: the totals do not depend on how the
  // rows were split among threads.
  auto rows = std::make_unique_for_overwrite<RowResult[]>(static_cast<size_t>(n));
  parallel_for(n, row_grain(v), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t t = targets[i];
      if (t == ignore_index) {
        row_max[i] = T(0);
        row_logsum[i] = T(0);
        rows[i] = {0.0, 0.0, false, false};
        continue;
      }
      const T* xi = logits + i * v;
      // Pass 1: max and Σx (the smoothing term needs the row mean).
      T m = -std::numeric_limits<T>::infinity();
      double sx = 0;
#pragma omp simd reduction(max : m) reduction(+ : sx)
      for (int64_t j = 0; j < v; ++j) {
        m = xi[j] > m ? xi[j] : m;
        sx += static_cast<double>(xi[j]);
      }
      // Pass 2 over the now cache-resident row: Σ exp(x - max), in double for long rows.
      const double s = exp_shifted_sum_f64<false>(xi, v, m);
      const double log_s = std::log(s);
      const double md = static_cast<double>(m);
      // lse - x_t and lse - mean(x) formed as (max - ·) + log_s: exact differences first, so
      // logits of 1e4 lose nothing to the size of lse.
      const double nll = (md - static_cast<double>(xi[t])) + log_s;
      const double smooth = (md - sx / static_cast<double>(v)) + log_s;
      bool correct = xi[t] == m;
      // The first maximum wins ties: the target is correct only if no earlier logit equals max.
      for (int64_t j = 0; correct && j < t; ++j) correct = xi[j] != m;
      row_max[i] = m;
      row_logsum[i] = static_cast<T>(log_s);
      rows[i] = {(1.0 - smoothing) * nll + smoothing * smooth, nll, true, correct};
    }
  });
  CrossEntropyTotals tot;
  for (int64_t i = 0; i < n; ++i) {
    if (!rows[i].kept) continue;
    tot.loss_sum += rows[i].loss;
    tot.nll_sum += rows[i].nll;
    tot.tokens += 1;
    tot.correct += rows[i].correct ? 1 : 0;
  }
  return tot;
}

namespace {

// Rows [b, e) of the backward. Always inlined, so the AVX-512 copy below compiles its own
// vector loop; the loop is elementwise (one exp and one multiply-add an element), so its vector
// width changes no result.
template <typename T>
[[gnu::always_inline]] inline void backward_rows(int64_t b, int64_t e, int64_t v, const T* logits,
                                                 const int32_t* targets, int64_t ignore_index,
                                                 const T* row_max, const T* row_logsum, T sc, T off,
                                                 T hit, T* dlogits) {
  for (int64_t i = b; i < e; ++i) {
    T* di = dlogits + i * v;
    const int64_t t = targets[i];
    if (t == ignore_index) {
      std::fill(di, di + v, T(0));
      continue;
    }
    const T* xi = logits + i * v;
    const T m = row_max[i], ls = row_logsum[i];
#pragma omp simd
    for (int64_t j = 0; j < v; ++j) di[j] = sc * simd_exp((xi[j] - m) - ls) - off;
    di[t] -= hit;
  }
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,bmi2")
void backward_rows_avx512(int64_t b, int64_t e, int64_t v, const float* logits,
                          const int32_t* targets, int64_t ignore_index, const float* row_max,
                          const float* row_logsum, float sc, float off, float hit, float* dlogits) {
  backward_rows<float>(b, e, v, logits, targets, ignore_index, row_max, row_logsum, sc, off, hit,
                       dlogits);
}
#pragma GCC pop_options

}  // namespace

template <typename T>
void cross_entropy_backward(int64_t n, int64_t v, const T* logits, const int32_t* targets,
                            int64_t ignore_index, double smoothing, const T* row_max,
                            const T* row_logsum, double scale, T* dlogits, CpuIsa isa) {
  TFM_CHECK(isa <= cpu_isa()) << "cross_entropy_backward: level " << cpu_isa_name(isa)
                              << " is above this process's " << cpu_isa_name(cpu_isa());
  const T sc = static_cast<T>(scale);
  const T off = static_cast<T>(scale * smoothing / static_cast<double>(v));
  const T hit = static_cast<T>(scale * (1.0 - smoothing));
  const bool avx512 = std::is_same_v<T, float> && isa >= CpuIsa::avx512;
  parallel_for(n, row_grain(v), [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, float>)
      if (avx512)
        return backward_rows_avx512(b, e, v, logits, targets, ignore_index, row_max, row_logsum, sc,
                                    off, hit, dlogits);
    backward_rows(b, e, v, logits, targets, ignore_index, row_max, row_logsum, sc, off, hit,
                  dlogits);
  });
}

#define TFM_INSTANTIATE(T)                                                                         \
  template CrossEntropyTotals cross_entropy_forward<T>(int64_t, int64_t, const T*, const int32_t*, \
                                                       int64_t, double, T*, T*);                   \
  template void cross_entropy_backward<T>(int64_t, int64_t, const T*, const int32_t*, int64_t,     \
                                          double, const T*, const T*, double, T*, CpuIsa);
TFM_INSTANTIATE(float)
TFM_INSTANTIATE(double)
#undef TFM_INSTANTIATE

}  // namespace tfm::cpu
