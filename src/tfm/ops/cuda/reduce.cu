#include "tfm/core/check.h"
#include "tfm/core/cuda/device_allocator.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/launch.h"
#include "tfm/ops/cuda/reduce.h"

namespace tfm::cuda {

namespace {

constexpr int kPartials = 1024;  // at most this many blocks of partial sums

__global__ void sum_squares_partial_kernel(int64_t n, const float* x, double* partial) {
  __shared__ double scratch[32];
  double s = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const double v = static_cast<double>(x[i]);
    s += v * v;
  }
  s = detail::block_sum(s, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void sum_partial_kernel(int64_t n, const float* x, double* partial) {
  __shared__ double scratch[32];
  double s = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    s += static_cast<double>(x[i]);
  s = detail::block_sum(s, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void finish_scaled_kernel(int count, const double* partial, double scale, float* out) {
  __shared__ double scratch[32];
  double s = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  s = detail::block_sum(s, scratch);
  if (threadIdx.x == 0) *out = static_cast<float>(scale * s);
}

// One block a row.
__global__ void sum_rows_kernel(int64_t cols, const float* x, float* out) {
  __shared__ double scratch[32];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  double s = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += static_cast<double>(row[c]);
  s = detail::block_sum(s, scratch);
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<float>(s);
}

__global__ void broadcast_rows_kernel(int64_t rows, int64_t cols, const float* g, float s,
                                      float* out) {
  const int64_t n = rows * cols, step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    out[i] = __fmul_rn(s, g[i / cols]);
}

__global__ void sum_partials_kernel(int count, const double* partial, double* acc) {
  __shared__ double scratch[32];
  double s = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  s = detail::block_sum(s, scratch);
  if (threadIdx.x == 0) *acc += s;
}

}  // namespace

void accumulate_sum_of_squares(int64_t n, const float* x, double* acc, const Stream& stream) {
  TFM_CHECK(n >= 0) << "cuda sum_of_squares: negative size " << n;
  if (n == 0) return;
  const int blocks = blocks_for(n, kThreads, kPartials);
  // Freed back to the cache on return; later work on this stream is ordered after ours.
  auto ws = device_allocator().allocate(sizeof(double) * blocks);
  auto* partial = static_cast<double*>(ws.get());
  sum_squares_partial_kernel<<<blocks, kThreads, 0, detail::native(stream)>>>(n, x, partial);
  TFM_CUDA_CHECK_LAUNCH();
  sum_partials_kernel<<<1, 1024, 0, detail::native(stream)>>>(blocks, partial, acc);
  TFM_CUDA_CHECK_LAUNCH();
}

double sum_of_squares(int64_t n, const float* x, const Stream& stream) {
  auto ws = device_allocator().allocate(sizeof(double));
  auto* acc = static_cast<double*>(ws.get());
  TFM_CUDA_CHECK(cudaMemsetAsync(acc, 0, sizeof(double), detail::native(stream)));
  accumulate_sum_of_squares(n, x, acc, stream);
  double out = 0;
  TFM_CUDA_CHECK(
      cudaMemcpyAsync(&out, acc, sizeof out, cudaMemcpyDeviceToHost, detail::native(stream)));
  stream.synchronize();
  return out;
}

void sum_scaled(int64_t n, const float* x, double scale, float* out, const Stream& stream) {
  TFM_CHECK(n >= 0) << "cuda sum: negative size " << n;
  const int blocks = blocks_for(n, kThreads, kPartials);
  auto ws = device_allocator().allocate(sizeof(double) * blocks);
  auto* partial = static_cast<double*>(ws.get());
  sum_partial_kernel<<<blocks, kThreads, 0, detail::native(stream)>>>(n, x, partial);
  TFM_CUDA_CHECK_LAUNCH();
  finish_scaled_kernel<<<1, 1024, 0, detail::native(stream)>>>(blocks, partial, scale, out);
  TFM_CUDA_CHECK_LAUNCH();
}

void sum_rows(int64_t rows, int64_t cols, const float* x, float* out, const Stream& stream) {
  if (rows <= 0) return;
  TFM_CHECK(rows <= INT32_MAX) << "cuda sum_rows: " << rows << " rows";
  sum_rows_kernel<<<static_cast<unsigned>(rows), row_threads(cols), 0, detail::native(stream)>>>(
      cols, x, out);
  TFM_CUDA_CHECK_LAUNCH();
}

void broadcast_rows(int64_t rows, int64_t cols, const float* g, float s, float* out,
                    const Stream& stream) {
  if (rows <= 0 || cols <= 0) return;
  broadcast_rows_kernel<<<blocks_for(rows * cols), kThreads, 0, detail::native(stream)>>>(
      rows, cols, g, s, out);
  TFM_CUDA_CHECK_LAUNCH();
}

}  // namespace tfm::cuda
