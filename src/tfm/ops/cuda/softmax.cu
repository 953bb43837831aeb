#include "tfm/core/check.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/launch.h"
#include "tfm/ops/cuda/softmax.h"

namespace tfm::cuda {

namespace {

// One block per row throughout.
template <bool kLog>
__global__ void softmax_forward_kernel(int64_t c, const float* x, float* y) {
  __shared__ float fscratch[32];
  __shared__ double dscratch[32];
  const float* xi = x + static_cast<int64_t>(blockIdx.x) * c;
  float* yi = y + static_cast<int64_t>(blockIdx.x) * c;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) m = fmaxf(m, xi[j]);
  m = detail::block_max(m, fscratch);
  double s = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
    const float e = expf(xi[j] - m);
    if constexpr (!kLog) yi[j] = e;
    s += static_cast<double>(e);
  }
  s = detail::block_sum(s, dscratch);
  if constexpr (kLog) {
    const auto ls = static_cast<float>(log(s));
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) yi[j] = (xi[j] - m) - ls;
  } else {
    const auto inv = static_cast<float>(1.0 / s);
    // Each thread rescales only the entries it wrote itself: no barrier needed.
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) yi[j] *= inv;
  }
}

template <bool kLog>
__global__ void softmax_backward_kernel(int64_t c, const float* dy, const float* y, float* dx) {
  __shared__ double scratch[32];
  const int64_t off = static_cast<int64_t>(blockIdx.x) * c;
  const float *dyi = dy + off, *yi = y + off;
  float* dxi = dx + off;
  double s = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
    s += kLog ? static_cast<double>(dyi[j]) : static_cast<double>(__fmul_rn(dyi[j], yi[j]));
  const auto st = static_cast<float>(detail::block_sum(s, scratch));
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
    if constexpr (kLog) {
      dxi[j] = __fsub_rn(dyi[j], __fmul_rn(expf(yi[j]), st));
    } else {
      dxi[j] = __fmul_rn(yi[j], __fsub_rn(dyi[j], st));
    }
  }
}

void check_rows(int64_t n, int64_t c, const char* what) {
  TFM_CHECK(n >= 0 && c > 0) << what << ": bad shape (" << n << ", " << c << ")";
  TFM_CHECK(n < (int64_t{1} << 31)) << what << ": " << n << " rows exceed one grid";
}

}  // namespace

void softmax_forward(int64_t n, int64_t c, const float* x, float* y, const Stream& stream) {
  check_rows(n, c, "cuda softmax");
  if (n == 0) return;
  softmax_forward_kernel<false>
      <<<static_cast<unsigned>(n), row_threads(c), 0, detail::native(stream)>>>(c, x, y);
  TFM_CUDA_CHECK_LAUNCH();
}

void softmax_backward(int64_t n, int64_t c, const float* dy, const float* y, float* dx,
                      const Stream& stream) {
  check_rows(n, c, "cuda softmax_backward");
  if (n == 0) return;
  softmax_backward_kernel<false>
      <<<static_cast<unsigned>(n), row_threads(c), 0, detail::native(stream)>>>(c, dy, y, dx);
  TFM_CUDA_CHECK_LAUNCH();
}

void log_softmax_forward(int64_t n, int64_t c, const float* x, float* y, const Stream& stream) {
  check_rows(n, c, "cuda log_softmax");
  if (n == 0) return;
  softmax_forward_kernel<true>
      <<<static_cast<unsigned>(n), row_threads(c), 0, detail::native(stream)>>>(c, x, y);
  TFM_CUDA_CHECK_LAUNCH();
}

void log_softmax_backward(int64_t n, int64_t c, const float* dy, const float* y, float* dx,
                          const Stream& stream) {
  check_rows(n, c, "cuda log_softmax_backward");
  if (n == 0) return;
  softmax_backward_kernel<true>
      <<<static_cast<unsigned>(n), row_threads(c), 0, detail::native(stream)>>>(c, dy, y, dx);
  TFM_CUDA_CHECK_LAUNCH();
}

}  // namespace tfm::cuda
