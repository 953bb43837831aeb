#include "tfm/core/check.h"
#include "tfm/core/cuda/device_allocator.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/cross_entropy.h"
#include "tfm/ops/cuda/launch.h"

namespace tfm::cuda {

namespace {

constexpr int kReduceThreads = 1024;

struct RowResult {
  double loss, nll;
  int kept, correct;
};

__device__ inline long long block_min_index(long long v, long long* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : LLONG_MAX;
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// One block per row.
__global__ void cross_entropy_forward_kernel(int64_t v, const float* logits, const int32_t* targets,
                                             int64_t ignore_index, double smoothing, float* row_max,
                                             float* row_logsum, RowResult* rows) {
  __shared__ double dscratch[32];
  __shared__ float fscratch[32];
  __shared__ long long iscratch[32];
  const int64_t i = blockIdx.x;
  const int64_t t = targets[i];
  if (t == ignore_index) {
    if (threadIdx.x == 0) {
      row_max[i] = 0.0f;
      row_logsum[i] = 0.0f;
      rows[i] = {0.0, 0.0, 0, 0};
    }
    return;
  }
  const float* xi = logits + i * v;
  float m = -INFINITY;
  double sx = 0;
  for (int64_t j = threadIdx.x; j < v; j += blockDim.x) {
    m = fmaxf(m, xi[j]);
    sx += static_cast<double>(xi[j]);
  }
  m = detail::block_max(m, fscratch);
  sx = detail::block_sum(sx, dscratch);
  double s = 0;
  long long first = LLONG_MAX;
  for (int64_t j = threadIdx.x; j < v; j += blockDim.x) {
    s += static_cast<double>(expf(xi[j] - m));
    if (xi[j] == m && j < first) first = j;
  }
  s = detail::block_sum(s, dscratch);
  first = block_min_index(first, iscratch);
  if (threadIdx.x != 0) return;
  const double log_s = log(s);
  const double md = static_cast<double>(m);
  // Exact differences first, as on the CPU: logits of 1e4 lose nothing to the size of lse.
  const double nll = (md - static_cast<double>(xi[t])) + log_s;
  const double smooth = (md - sx / static_cast<double>(v)) + log_s;
  row_max[i] = m;
  row_logsum[i] = static_cast<float>(log_s);
  rows[i] = {(1.0 - smoothing) * nll + smoothing * smooth, nll, 1, first == t ? 1 : 0};
}

// One block: totals over all rows, a fixed tree over fixed per-thread ranges.
__global__ void cross_entropy_totals_kernel(int64_t n, const RowResult* rows,
                                            CrossEntropyTotals* out) {
  __shared__ double scratch[32];
  double loss = 0, nll = 0, tokens = 0, correct = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    loss += rows[i].loss;
    nll += rows[i].nll;
    tokens += rows[i].kept;
    correct += rows[i].correct;
  }
  loss = detail::block_sum(loss, scratch);
  nll = detail::block_sum(nll, scratch);
  tokens = detail::block_sum(tokens, scratch);  // integers below 2^53: exact in double
  correct = detail::block_sum(correct, scratch);
  if (threadIdx.x == 0)
    *out = {loss, nll, static_cast<int64_t>(tokens), static_cast<int64_t>(correct)};
}

__global__ void cross_entropy_backward_kernel(int64_t v, const float* logits,
                                              const int32_t* targets, int64_t ignore_index,
                                              const float* row_max, const float* row_logsum,
                                              float sc, float off, float hit, float* dlogits) {
  const int64_t i = blockIdx.x;
  const int64_t t = targets[i];
  float* di = dlogits + i * v;
  if (t == ignore_index) {
    for (int64_t j = threadIdx.x; j < v; j += blockDim.x) di[j] = 0.0f;
    return;
  }
  const float* xi = logits + i * v;
  const float m = row_max[i], ls = row_logsum[i];
  for (int64_t j = threadIdx.x; j < v; j += blockDim.x) {
    float d = __fsub_rn(__fmul_rn(sc, expf(__fsub_rn(__fsub_rn(xi[j], m), ls))), off);
    if (j == t) d = __fsub_rn(d, hit);
    di[j] = d;
  }
}

}  // namespace

CrossEntropyTotals cross_entropy_forward(int64_t n, int64_t v, const float* logits,
                                         const int32_t* targets, int64_t ignore_index,
                                         double smoothing, float* row_max, float* row_logsum,
                                         const Stream& stream) {
  TFM_CHECK(n >= 0 && v > 0) << "cuda cross_entropy: bad shape (" << n << ", " << v << ")";
  TFM_CHECK(n < (int64_t{1} << 31)) << "cuda cross_entropy: " << n << " rows exceed one grid";
  CrossEntropyTotals tot;
  if (n == 0) return tot;
  auto ws = device_allocator().allocate(sizeof(RowResult) * n + sizeof(CrossEntropyTotals));
  auto* rows = static_cast<RowResult*>(ws.get());
  auto* dtot = reinterpret_cast<CrossEntropyTotals*>(rows + n);
  cross_entropy_forward_kernel<<<static_cast<unsigned>(n), row_threads(v), 0,
                                 detail::native(stream)>>>(v, logits, targets, ignore_index,
                                                           smoothing, row_max, row_logsum, rows);
  TFM_CUDA_CHECK_LAUNCH();
  cross_entropy_totals_kernel<<<1, kReduceThreads, 0, detail::native(stream)>>>(n, rows, dtot);
  TFM_CUDA_CHECK_LAUNCH();
  TFM_CUDA_CHECK(
      cudaMemcpyAsync(&tot, dtot, sizeof tot, cudaMemcpyDeviceToHost, detail::native(stream)));
  stream.synchronize();
  return tot;
}

void cross_entropy_backward(int64_t n, int64_t v, const float* logits, const int32_t* targets,
                            int64_t ignore_index, double smoothing, const float* row_max,
                            const float* row_logsum, double scale, float* dlogits,
                            const Stream& stream) {
  TFM_CHECK(n >= 0 && v > 0) << "cuda cross_entropy_backward: bad shape (" << n << ", " << v << ")";
  if (n == 0) return;
  const auto sc = static_cast<float>(scale);
  const auto off = static_cast<float>(scale * smoothing / static_cast<double>(v));
  const auto hit = static_cast<float>(scale * (1.0 - smoothing));
  cross_entropy_backward_kernel<<<static_cast<unsigned>(n), row_threads(v), 0,
                                  detail::native(stream)>>>(
      v, logits, targets, ignore_index, row_max, row_logsum, sc, off, hit, dlogits);
  TFM_CUDA_CHECK_LAUNCH();
}

}  // namespace tfm::cuda
