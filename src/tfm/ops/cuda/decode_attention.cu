// One block per (batch row, head): the row's scores in shared memory (a warp a position), the
// softmax over them, then a thread per output dimension summing over positions.
#include <cmath>

#include "tfm/core/check.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/decode_attention.h"

namespace tfm::cuda {

namespace {

constexpr int kBlock = 128;

__device__ __forceinline__ float warp_sum_f(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void decode_attention_kernel(kernels::DecodeAttentionArgs a, DeviceFault* fault) {
  extern __shared__ float sh[];
  __shared__ float fmax_scratch[32];
  __shared__ double dsum_scratch[32];
  const int64_t S = a.kv_len, H = a.heads, Dh = a.head_dim, C = H * Dh;
  const int64_t b = blockIdx.x / H, h = blockIdx.x % H;
  float* p = sh;      // (S) scores, then unnormalised probabilities
  float* q = sh + S;  // (Dh) this head's query
  for (int64_t d = threadIdx.x; d < Dh; d += blockDim.x) q[d] = a.q[b * C + h * Dh + d];
  __syncthreads();
  const int64_t kb = a.kv_rows ? a.kv_rows[b] : b;
  float* out = a.out + b * C + h * Dh;
  if (a.kv_rows && (kb < 0 || kb >= a.key_rows)) {  // zeros, reported at the next host copy
    if (threadIdx.x == 0 && h == 0)
      detail::record_fault(fault, FaultSite::decode_kv_rows, b, kb, a.key_rows);
    for (int64_t d = threadIdx.x; d < Dh; d += blockDim.x) out[d] = 0.f;
    if (a.probs)
      for (int64_t s = threadIdx.x; s < S; s += blockDim.x) a.probs[(b * H + h) * S + s] = 0.f;
    return;  // the whole block: kb is the same for every thread
  }
  const uint8_t* mask = a.mask ? a.mask + kb * S : nullptr;
  const int32_t* slots = a.kv_slots ? a.kv_slots + b * a.kv_slots_ld : nullptr;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int64_t s = warp; s < S; s += warps) {
    const int64_t row = slots ? slots[s] : kb;
    if (row < 0 || row >= a.key_rows) {  // a bad slot: the position is left out, and reported
      if (lane == 0) {
        if (h == 0)
          detail::record_fault(fault, FaultSite::decode_kv_slots, b * S + s, row, a.key_rows);
        p[s] = -INFINITY;
      }
      continue;
    }
    const float* kr = a.k + row * a.kv_batch_stride + s * C + h * Dh;
    float dot = 0.f;
    for (int64_t d = lane; d < Dh; d += 32) dot = fmaf(q[d], kr[d], dot);
    dot = warp_sum_f(dot);
    if (lane == 0) p[s] = mask && mask[s] ? -INFINITY : dot * a.scale;
  }
  __syncthreads();
  float mx = -INFINITY;
  for (int64_t s = threadIdx.x; s < S; s += blockDim.x) mx = fmaxf(mx, p[s]);
  mx = detail::block_max(mx, fmax_scratch);
  if (mx == -INFINITY) {  // every key masked: zeros, as on the CPU
    for (int64_t d = threadIdx.x; d < Dh; d += blockDim.x) out[d] = 0.f;
    if (a.probs)
      for (int64_t s = threadIdx.x; s < S; s += blockDim.x) a.probs[(b * H + h) * S + s] = 0.f;
    return;
  }
  double sum = 0;
  for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
    const float e = expf(p[s] - mx);
    p[s] = e;
    sum += e;
  }
  const float inv = 1.f / static_cast<float>(detail::block_sum(sum, dsum_scratch));
  __syncthreads();  // every p[s] written
  if (a.probs)
    for (int64_t s = threadIdx.x; s < S; s += blockDim.x) a.probs[(b * H + h) * S + s] = p[s] * inv;
  for (int64_t d = threadIdx.x; d < Dh; d += blockDim.x) {
    float acc = 0.f;
    for (int64_t s = 0; s < S; ++s) {
      const int64_t row = slots ? slots[s] : kb;
      if (row < 0 || row >= a.key_rows) continue;  // recorded above; p[s] is 0
      const float* vr = a.v + row * a.kv_batch_stride + s * C + h * Dh;
      acc = fmaf(p[s], vr[d], acc);
    }
    out[d] = acc * inv;
  }
}

}  // namespace

void decode_attention_forward(const kernels::DecodeAttentionArgs& a, const Stream& stream) {
  if (a.batch == 0 || a.heads == 0) return;
  if (a.kv_len == 0) {
    TFM_CUDA_CHECK(cudaMemsetAsync(a.out, 0, sizeof(float) * a.batch * a.heads * a.head_dim,
                                   detail::native(stream)));
    return;
  }
  TFM_CHECK(a.kv_len + a.head_dim <= kDecodeAttentionMaxSpan)
      << "cuda decode_attention: " << a.kv_len << " positions of head width " << a.head_dim
      << " exceed the kernel's " << kDecodeAttentionMaxSpan;
  TFM_CHECK(a.batch * a.heads <= INT32_MAX) << "cuda decode_attention: too many rows";
  const size_t shared = sizeof(float) * static_cast<size_t>(a.kv_len + a.head_dim);
  decode_attention_kernel<<<static_cast<unsigned>(a.batch * a.heads), kBlock, shared,
                            detail::native(stream)>>>(a, device_fault_record());
  TFM_CUDA_CHECK_LAUNCH();
}

}  // namespace tfm::cuda
