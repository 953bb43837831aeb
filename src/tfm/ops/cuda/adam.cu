#include <algorithm>
#include <cstring>
#include <vector>

#include "tfm/core/check.h"
#include "tfm/core/cuda/device_allocator.h"
#include "tfm/ops/cuda/adam.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/launch.h"

namespace tfm::cuda {

namespace {

constexpr int64_t kChunk = 4096;  // elements per block in the multi-tensor step

// Element i of one tensor: the contract of ops/cpu/adam_cpu.h, every rounding explicit (the
// four fused multiply-adds as __fmaf_rn, nothing left for nvcc to contract). Returns the new p.
__device__ __forceinline__ float adam_update(int64_t i, float* p, const float* g, float* m,
                                             float* v, const AdamUpdate& a) {
  const float gg = __fmul_rn(g[i], a.grad_scale);
  const float pi = p[i];
  const float gi = a.coupled_wd ? __fmaf_rn(a.weight_decay, pi, gg) : gg;
  const float mi = __fmaf_rn(a.beta1, m[i], __fmul_rn(1.0f - a.beta1, gi));
  const float vi = __fmaf_rn(a.beta2, v[i], __fmul_rn(__fmul_rn(1.0f - a.beta2, gi), gi));
  const float denom = __fmaf_rn(__fsqrt_rn(vi), a.inv_sqrt_bc2, a.eps);
  const float pn = __fmaf_rn(pi, a.decay, -__fdiv_rn(__fmul_rn(a.step_size, mi), denom));
  p[i] = pn;
  m[i] = mi;
  v[i] = vi;
  return pn;
}

__global__ void adam_kernel(int64_t n, float* p, const float* g, float* m, float* v, AdamUpdate a) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    adam_update(i, p, g, m, v, a);
}

struct Chunk {
  int32_t tensor;
  int64_t begin, end;
};

__global__ void adam_multi_kernel(const AdamTensor* tensors, const Chunk* chunks, AdamUpdate a) {
  const Chunk c = chunks[blockIdx.x];
  const AdamTensor t = tensors[c.tensor];
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    const float p = adam_update(i, t.p, t.g, t.m, t.v, a);
    if (t.p_bf16 != nullptr) t.p_bf16[i] = detail::bf16_bits(p);
  }
}

}  // namespace

void adam_step(int64_t n, float* p, const float* g, float* m, float* v, const AdamUpdate& params,
               const Stream& stream) {
  if (n <= 0) return;
  adam_kernel<<<blocks_for(n), kThreads, 0, detail::native(stream)>>>(n, p, g, m, v, params);
  TFM_CUDA_CHECK_LAUNCH();
}

void adam_step_multi(const std::vector<AdamTensor>& tensors, const AdamUpdate& params,
                     const Stream& stream) {
  std::vector<Chunk> chunks;
  for (size_t k = 0; k < tensors.size(); ++k) {
    TFM_CHECK(tensors[k].n >= 0) << "adam_step_multi: tensor " << k << " has negative size";
    for (int64_t b = 0; b < tensors[k].n; b += kChunk)
      chunks.push_back({static_cast<int32_t>(k), b, std::min(tensors[k].n, b + kChunk)});
  }
  if (chunks.empty()) return;
  TFM_CHECK(chunks.size() < (size_t{1} << 31)) << "adam_step_multi: too many chunks";
  const size_t tensor_bytes = sizeof(AdamTensor) * tensors.size();
  const size_t table_bytes = tensor_bytes + sizeof(Chunk) * chunks.size();
  // One upload for both tables, the chunks right after the tensors.
  static_assert(sizeof(AdamTensor) % alignof(Chunk) == 0);
  std::vector<unsigned char> host(table_bytes);
  std::memcpy(host.data(), tensors.data(), tensor_bytes);
  std::memcpy(host.data() + tensor_bytes, chunks.data(), sizeof(Chunk) * chunks.size());
  auto ws = device_allocator().allocate(table_bytes);
  auto* base = static_cast<unsigned char*>(ws.get());
  // From pageable memory the call returns once the bytes are staged: `host` may then go.
  TFM_CUDA_CHECK(cudaMemcpyAsync(base, host.data(), table_bytes, cudaMemcpyHostToDevice,
                                 detail::native(stream)));
  adam_multi_kernel<<<static_cast<unsigned>(chunks.size()), kThreads, 0, detail::native(stream)>>>(
      reinterpret_cast<const AdamTensor*>(base),
      reinterpret_cast<const Chunk*>(base + tensor_bytes), params);
  TFM_CUDA_CHECK_LAUNCH();
}

}  // namespace tfm::cuda
