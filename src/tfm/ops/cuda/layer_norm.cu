#include "tfm/core/check.h"
#include "tfm/core/cuda/device_allocator.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/launch.h"
#include "tfm/ops/cuda/layer_norm.h"

namespace tfm::cuda {

namespace {

constexpr int64_t kRowsPerChunk = 32;  // as the CPU kernel: fixed, so sums are reproducible

struct RowScale {
  float hi, lo, r;
};

__device__ __forceinline__ RowScale row_scale(double mean, double rstd) {
  const float hi = static_cast<float>(mean);
  return {hi, static_cast<float>(mean - static_cast<double>(hi)), static_cast<float>(rstd)};
}

// ((x - hi) - lo) * r without contraction into FMAs, as the CPU computes it.
__device__ __forceinline__ float xhat(float x, const RowScale& s) {
  return __fmul_rn(__fsub_rn(__fsub_rn(x, s.hi), s.lo), s.r);
}

// One block per row. kAdd: the row is x + residual, written to `sum` first.
template <bool kAdd>
__global__ void layer_norm_forward_kernel(int64_t c, const float* x, const float* residual,
                                          const float* gamma, const float* beta, double eps,
                                          float* sum, float* y, double* mean, double* rstd) {
  __shared__ double scratch[32];
  const int64_t row = blockIdx.x;
  const float* xi = x + row * c;
  const float* src = xi;
  if constexpr (kAdd) {
    float* si = sum + row * c;
    const float* ri = residual + row * c;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) si[j] = xi[j] + ri[j];
    src = si;
    __syncthreads();  // each thread rereads only what it wrote, but keep the row visible
  }
  double s = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) s += static_cast<double>(src[j]);
  const double m = detail::block_sum(s, scratch) / static_cast<double>(c);
  double ss = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
    const double d = static_cast<double>(src[j]) - m;
    ss += d * d;
  }
  const double r = 1.0 / sqrt(detail::block_sum(ss, scratch) / static_cast<double>(c) + eps);
  if (threadIdx.x == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
  const RowScale sc = row_scale(m, r);
  float* yi = y + row * c;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x)
    yi[j] = __fadd_rn(__fmul_rn(xhat(src[j], sc), gamma[j]), beta[j]);
}

// One block per row: dx.
__global__ void layer_norm_dx_kernel(int64_t c, const float* dy, const float* x, const double* mean,
                                     const double* rstd, const float* gamma, const float* extra,
                                     float* dx) {
  __shared__ double scratch[32];
  const int64_t row = blockIdx.x;
  const float* xi = x + row * c;
  const float* dyi = dy + row * c;
  const RowScale s = row_scale(mean[row], rstd[row]);
  double sg = 0, sgx = 0;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
    const float g = __fmul_rn(dyi[j], gamma[j]);
    sg += static_cast<double>(g);
    sgx += static_cast<double>(__fmul_rn(g, xhat(xi[j], s)));
  }
  const double inv_c = 1.0 / static_cast<double>(c);
  const float a = static_cast<float>(detail::block_sum(sg, scratch) * inv_c);
  const float b = static_cast<float>(detail::block_sum(sgx, scratch) * inv_c);
  float* dxi = dx + row * c;
  const float* ei = extra != nullptr ? extra + row * c : nullptr;
  for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
    const float g = __fmul_rn(dyi[j], gamma[j]);
    float d = __fmul_rn(s.r, __fsub_rn(__fsub_rn(g, a), __fmul_rn(xhat(xi[j], s), b)));
    if (ei != nullptr) d = __fadd_rn(d, ei[j]);
    dxi[j] = d;
  }
}

// grid (column blocks, chunks): partial column sums of dy * xhat and dy over one row chunk.
__global__ void layer_norm_param_partials_kernel(int64_t n, int64_t c, const float* dy,
                                                 const float* x, const double* mean,
                                                 const double* rstd, float* part_g, float* part_b) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= c) return;
  const int64_t k = blockIdx.y;
  const int64_t r0 = k * kRowsPerChunk;
  const int64_t r1 = min(n, r0 + kRowsPerChunk);
  float pg = 0.0f, pb = 0.0f;
  for (int64_t i = r0; i < r1; ++i) {
    const float d = dy[i * c + j];
    pg = __fadd_rn(pg, __fmul_rn(d, xhat(x[i * c + j], row_scale(mean[i], rstd[i]))));
    pb = __fadd_rn(pb, d);
  }
  part_g[k * c + j] = pg;
  part_b[k * c + j] = pb;
}

void check_rows(int64_t n, int64_t c, const char* what) {
  TFM_CHECK(n >= 0 && c > 0) << what << ": bad shape (" << n << ", " << c << ")";
  TFM_CHECK(n < (int64_t{1} << 31)) << what << ": " << n << " rows exceed one grid";
}

}  // namespace

void layer_norm_forward(int64_t n, int64_t c, const float* x, const float* gamma, const float* beta,
                        double eps, float* y, double* mean, double* rstd, const Stream& stream) {
  check_rows(n, c, "cuda layer_norm");
  if (n == 0) return;
  layer_norm_forward_kernel<false>
      <<<static_cast<unsigned>(n), row_threads(c), 0, detail::native(stream)>>>(
          c, x, nullptr, gamma, beta, eps, nullptr, y, mean, rstd);
  TFM_CUDA_CHECK_LAUNCH();
}

void add_layer_norm_forward(int64_t n, int64_t c, const float* x, const float* residual,
                            const float* gamma, const float* beta, double eps, float* sum, float* y,
                            double* mean, double* rstd, const Stream& stream) {
  check_rows(n, c, "cuda add_layer_norm");
  if (n == 0) return;
  layer_norm_forward_kernel<true>
      <<<static_cast<unsigned>(n), row_threads(c), 0, detail::native(stream)>>>(
          c, x, residual, gamma, beta, eps, sum, y, mean, rstd);
  TFM_CUDA_CHECK_LAUNCH();
}

void layer_norm_backward(int64_t n, int64_t c, const float* dy, const float* x, const double* mean,
                         const double* rstd, const float* gamma, const float* dx_extra, float* dx,
                         float* dgamma, float* dbeta, const Stream& stream) {
  check_rows(n, c, "cuda layer_norm_backward");
  const bool want_params = dgamma != nullptr && dbeta != nullptr;
  if (n == 0 || (dx == nullptr && !want_params)) return;
  if (dx != nullptr) {
    layer_norm_dx_kernel<<<static_cast<unsigned>(n), row_threads(c), 0, detail::native(stream)>>>(
        c, dy, x, mean, rstd, gamma, dx_extra, dx);
    TFM_CUDA_CHECK_LAUNCH();
  }
  if (!want_params) return;
  const int64_t chunks = (n + kRowsPerChunk - 1) / kRowsPerChunk;
  TFM_CHECK(chunks < 65536) << "cuda layer_norm_backward: " << n << " rows exceed grid.y";
  // Freed back to the cache on return; later work on the same stream is ordered after ours.
  auto ws = device_allocator().allocate(sizeof(float) * 2 * chunks * c);
  float* part_g = static_cast<float*>(ws.get());
  float* part_b = part_g + chunks * c;
  const dim3 grid(static_cast<unsigned>((c + kThreads - 1) / kThreads),
                  static_cast<unsigned>(chunks));
  layer_norm_param_partials_kernel<<<grid, kThreads, 0, detail::native(stream)>>>(
      n, c, dy, x, mean, rstd, part_g, part_b);
  TFM_CUDA_CHECK_LAUNCH();
  detail::sum_partials(chunks, c, part_g, dgamma, stream);
  detail::sum_partials(chunks, c, part_b, dbeta, stream);
}

}  // namespace tfm::cuda
