#include "tfm/ops/cpu/linear_cpu.h"

#include <algorithm>
#include <type_traits>

#include "tfm/core/allocator.h"
#include "tfm/core/check.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/activation_cpu.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/cpu/primitives.h"

namespace tfm::cpu {

namespace {

// Up to this many rows (a GEMV-like decoding step) dnnl_sgemm plus a pass over the tiny y beats
// the matmul primitive; above it the primitive wins or ties. bench_linear, 2 threads, Zen 4,
// GFLOP/s for bias+relu with N×K = 2048×512, primitive vs sgemm: M=1 34 vs 94, M=8 212 vs 248,
// M=16 306 vs 81, M=32 369 vs 138, M=2048 496 vs 475.
constexpr int64_t kSgemmMaxRows = 8;

// y (M, N) = act(y + bias) in one pass, rows split across threads.
template <typename T>
void bias_activation_rows(int64_t m, int64_t n, const T* bias, Activation act, T* y) {
  if (bias == nullptr && act == Activation::none) return;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(n, 1));
  parallel_for(m, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* row = y + r * n;
      if (bias != nullptr) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
      }
      if (act == Activation::relu) relu_forward_serial<T>(n, row, row);
      input_activation_serial<T>(act, n, row, row);
    }
  });
}

}  // namespace

template <typename T>
void linear_forward(int64_t m, int64_t n, int64_t k, const T* x, const T* w, const T* bias,
                    Activation act, T* y, LinearPath path) {
  if (m == 0 || n == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (path == LinearPath::automatic)
      path = m <= kSgemmMaxRows ? LinearPath::sgemm : LinearPath::primitive;
    if (path == LinearPath::primitive && k > 0) {
      matmul_primitive_f32(m, n, k, x, w, bias, act, y);
      return;
    }
  }
  // op(B) = wᵀ: w (N, K) read transposed by the GEMM, no copy.
  gemm<T>(false, true, m, n, k, T(1), x, std::max<int64_t>(k, 1), w, std::max<int64_t>(k, 1), T(0),
          y, n);
  bias_activation_rows<T>(m, n, bias, act, y);
}

template <typename T>
void column_sums(int64_t m, int64_t n, const T* a, T* out) {
  // f32 sums in double: rows (tokens in a batch) run to tens of thousands.
  using Acc = std::conditional_t<std::is_same_v<T, float>, double, T>;
  constexpr int64_t kBlock = 256;  // columns per task: an accumulator row that stays in L1
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  // Enough rows per task that a thread is worth waking; boundaries depend on n only.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(m, 1) / kBlock);
  parallel_for(blocks, grain, [&](int64_t b0, int64_t b1) {
    Acc acc[kBlock];
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t j0 = blk * kBlock, width = std::min(kBlock, n - j0);
      std::fill(acc, acc + width, Acc(0));
      for (int64_t i = 0; i < m; ++i) {
        const T* row = a + i * n + j0;
#pragma omp simd
        for (int64_t j = 0; j < width; ++j) acc[j] += static_cast<Acc>(row[j]);
      }
      for (int64_t j = 0; j < width; ++j) out[j0 + j] = static_cast<T>(acc[j]);
    }
  });
}

template <typename T>
void linear_backward(int64_t m, int64_t n, int64_t k, const T* dz, const T* x, const T* w, T* dx,
                     T* dw, T* db) {
  const int64_t ldk = std::max<int64_t>(k, 1), ldn = std::max<int64_t>(n, 1);
  if (dx != nullptr) {
    // dx (M, K) = dz (M, N) · w (N, K)
    gemm<T>(false, false, m, k, n, T(1), dz, ldn, w, ldk, T(0), dx, ldk);
  }
  if (dw != nullptr) {
    // dw (N, K) = dzᵀ (N, M) · x (M, K): the sum over every row of the batch is this GEMM's K.
    gemm<T>(true, false, n, k, m, T(1), dz, ldn, x, ldk, T(0), dw, ldk);
  }
  if (db != nullptr) column_sums<T>(m, n, dz, db);
}

void linear_forward_bf16(int64_t m, int64_t n, int64_t k, const uint16_t* x, const uint16_t* w,
                         const float* bias, Activation act, float* y) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: y = act(bias)
    std::fill(y, y + m * n, 0.f);
    bias_activation_rows<float>(m, n, bias, act, y);
    return;
  }
  matmul_primitive_bf16(false, true, m, n, k, x, w, bias, act, y);
}

void linear_backward_bf16(int64_t m, int64_t n, int64_t k, const float* dz, const uint16_t* x,
                          const uint16_t* w, float* dx, float* dw, float* db) {
  if (db != nullptr) column_sums<float>(m, n, dz, db);
  if (dx == nullptr && dw == nullptr) return;
  // Empty sums: dx over N, dw over M.
  if (n == 0 || k == 0) {
    if (dx != nullptr) std::fill(dx, dx + m * k, 0.f);
    return;
  }
  if (m == 0) {
    if (dw != nullptr) std::fill(dw, dw + n * k, 0.f);
    return;
  }
  std::shared_ptr<void> dz_buf = cpu_allocator().allocate(static_cast<size_t>(m * n) * 2);
  auto* dzb = static_cast<uint16_t*>(dz_buf.get());
  float_to_bf16(m * n, dz, dzb);
  // dx (M, K) = dz (M, N) · w (N, K): w row-major is already op(B).
  if (dx != nullptr)
    matmul_primitive_bf16(false, false, m, k, n, dzb, w, nullptr, Activation::none, dx);
  // dw (N, K) = dzᵀ (N, M) · x (M, K): the batch's rows are this GEMM's reduction.
  if (dw != nullptr)
    matmul_primitive_bf16(true, false, n, k, m, dzb, x, nullptr, Activation::none, dw);
}

#define TFM_INSTANTIATE(T)                                                                      \
  template void linear_forward<T>(int64_t, int64_t, int64_t, const T*, const T*, const T*,      \
                                  Activation, T*, LinearPath);                                  \
  template void linear_backward<T>(int64_t, int64_t, int64_t, const T*, const T*, const T*, T*, \
                                   T*, T*);                                                     \
  template void column_sums<T>(int64_t, int64_t, const T*, T*);
TFM_INSTANTIATE(float)
TFM_INSTANTIATE(double)
#undef TFM_INSTANTIATE

}  // namespace tfm::cpu
