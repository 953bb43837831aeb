#include <vector>

#include "tfm/core/check.h"
#include "tfm/core/cuda/device_allocator.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/embedding.h"
#include "tfm/ops/cuda/launch.h"

namespace tfm::cuda {

namespace {

__global__ void embedding_forward_kernel(int64_t total, int64_t v, int64_t c, const int32_t* ids,
                                         const float* weight, float* out, DeviceFault* fault) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += stride) {
    const int64_t i = e / c, j = e - i * c;
    const int64_t id = ids[i];
    if (id < 0 || id >= v) {
      if (j == 0) detail::record_fault(fault, FaultSite::embedding_id, i, id, v);
      out[e] = 0.f;
      continue;
    }
    out[e] = weight[id * c + j];
  }
}

// grid (V, column blocks): row r's gradient from the positions order[start[r]..start[r+1]).
__global__ void embedding_backward_kernel(int64_t c, const int64_t* start, const int64_t* order,
                                          const float* grad_out, float* grad_weight) {
  const int64_t r = blockIdx.x;
  const int64_t j = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (j >= c) return;
  const int64_t k0 = start[r], k1 = start[r + 1];
  float s = 0.0f;
  if (k0 < k1) {
    s = grad_out[order[k0] * c + j];
    for (int64_t k = k0 + 1; k < k1; ++k) s = __fadd_rn(s, grad_out[order[k] * c + j]);
  }
  grad_weight[r * c + j] = s;
}

}  // namespace

void embedding_forward(int64_t n, const int32_t* ids, int64_t v, int64_t c, const float* weight,
                       float* out, const Stream& stream) {
  TFM_CHECK(n >= 0 && v >= 0 && c >= 0)
      << "cuda embedding: bad shape n=" << n << " V=" << v << " C=" << c;
  const int64_t total = n * c;
  if (total == 0) return;
  embedding_forward_kernel<<<blocks_for(total), kThreads, 0, detail::native(stream)>>>(
      total, v, c, ids, weight, out, device_fault_record());
  TFM_CUDA_CHECK_LAUNCH();
}

void embedding_backward(int64_t n, const int32_t* ids, int64_t v, int64_t c, int64_t padding_idx,
                        const float* grad_out, float* grad_weight, const Stream& stream) {
  TFM_CHECK(n >= 0 && v > 0 && c > 0)
      << "cuda embedding_backward: bad shape n=" << n << " V=" << v << " C=" << c;
  TFM_CHECK(v < (int64_t{1} << 31)) << "cuda embedding_backward: vocabulary " << v << " too big";
  std::vector<int32_t> host_ids(static_cast<size_t>(n));
  if (n > 0) {
    TFM_CUDA_CHECK(cudaMemcpyAsync(host_ids.data(), ids, sizeof(int32_t) * n,
                                   cudaMemcpyDeviceToHost, detail::native(stream)));
    stream.synchronize();
  }
  // Stable counting sort, as in cpu::embedding_backward.
  std::vector<int64_t> start_order(static_cast<size_t>(v + 1 + n), 0);
  int64_t* start = start_order.data();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t id = host_ids[i];
    TFM_CHECK(id >= 0 && id < v) << "cuda embedding_backward: id " << id << " at position " << i
                                 << " is outside the vocabulary [0, " << v << ")";
    if (id != padding_idx) ++start[id + 1];
  }
  for (int64_t r = 0; r < v; ++r) start[r + 1] += start[r];
  int64_t* order = start + v + 1;
  {
    std::vector<int64_t> cursor(start, start + v);
    for (int64_t i = 0; i < n; ++i)
      if (host_ids[i] != padding_idx) order[cursor[host_ids[i]]++] = i;
  }
  auto dev = device_allocator().allocate(sizeof(int64_t) * start_order.size());
  auto* dstart = static_cast<int64_t*>(dev.get());
  // The host vector outlives the copy: cudaMemcpyAsync from pageable memory returns only once the
  // source has been staged.
  TFM_CUDA_CHECK(cudaMemcpyAsync(dstart, start_order.data(), sizeof(int64_t) * start_order.size(),
                                 cudaMemcpyHostToDevice, detail::native(stream)));
  const int threads = c >= kThreads ? kThreads : static_cast<int>((c + 31) / 32 * 32);
  const int64_t col_blocks = (c + threads - 1) / threads;
  TFM_CHECK(col_blocks < 65536) << "cuda embedding_backward: width " << c << " exceeds grid.y";
  const dim3 grid(static_cast<unsigned>(v), static_cast<unsigned>(col_blocks));
  embedding_backward_kernel<<<grid, threads, 0, detail::native(stream)>>>(c, dstart, dstart + v + 1,
                                                                          grad_out, grad_weight);
  TFM_CUDA_CHECK_LAUNCH();
}

}  // namespace tfm::cuda
