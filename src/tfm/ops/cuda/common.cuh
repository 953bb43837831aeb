// Device helpers shared by the kernels (included only by .cu files).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tfm/core/cuda/check.h"
#include "tfm/core/cuda/device_fault.h"
#include "tfm/core/cuda/runtime.h"

namespace tfm::cuda::detail {

inline cudaStream_t native(const Stream& s) {
  return static_cast<cudaStream_t>(s.native());
}

// Launch errors (bad configuration) surface at once; faults inside the kernel at the next sync.
#define TFM_CUDA_CHECK_LAUNCH() TFM_CUDA_CHECK(cudaGetLastError())

// Records a bad index (core/cuda/device_fault.h): the first one since the last report wins; the
// host throws it after its next copy from the device.
__device__ inline void record_fault(DeviceFault* f, FaultSite site, int64_t position, int64_t value,
                                    int64_t bound) {
  if (atomicCAS(&f->claim, 0, 1) != 0) return;
  f->position = position;
  f->value = value;
  f->bound = bound;
  __threadfence_system();  // the fields before the site that says they are set
  f->site = static_cast<int32_t>(site);
}

// The bf16 bit pattern of v, rounded to nearest even, a NaN kept a quiet NaN: cpu::to_bf16.
__device__ __forceinline__ uint16_t bf16_bits(float v) {
  const uint32_t bits = __float_as_uint(v);
  return isnan(v) ? static_cast<uint16_t>((bits >> 16) | 0x40u)
                  : static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

__device__ __forceinline__ double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// The tree has a fixed shape, so the result is the same bits on every run. `scratch` holds 32.
__device__ inline double block_sum(double v, double* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0;
  return warp_sum(v);
}

__device__ inline float block_max(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : -INFINITY;
  return warp_max(v);
}

// Philox4x32-10, word for word the CPU's tfm::philox4x32 (core/rng.cpp): element i of stream
// (seed, id) is the same bits on both.
__device__ __forceinline__ uint4 philox4x32(uint4 ctr, uint2 key) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    const uint32_t hi0 = __umulhi(kM0, ctr.x), lo0 = kM0 * ctr.x;
    const uint32_t hi1 = __umulhi(kM1, ctr.z), lo1 = kM1 * ctr.z;
    ctr = make_uint4(hi1 ^ ctr.y ^ key.x, lo1, hi0 ^ ctr.w ^ key.y, lo0);
    key.x += kW0;
    key.y += kW1;
  }
  return ctr;
}

// RandomStream(seed, stream).block(i).
__device__ __forceinline__ uint4 philox_block(uint64_t seed, uint64_t stream, uint64_t i) {
  return philox4x32(make_uint4(static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32),
                               static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)),
                    make_uint2(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)));
}

__device__ __forceinline__ uint32_t word(const uint4& w, int l) {
  return l == 0 ? w.x : l == 1 ? w.y : l == 2 ? w.z : w.w;
}

// Column sums of chunk partials: out[j] = Σ_k part[k·c + j] over k < chunks, in double, rounded
// once. Lane l of kSumLanes sums the chunks k ≡ l (mod kSumLanes) in order, then lane 0 adds the
// lanes' sums in lane order: a fixed order for given (chunks, c), so the same bits run to run, and
// kSumLanes threads a column instead of one (a column of 512 chunks took 124 µs in one thread).
// Launch with sum_partials (below).
inline constexpr int kSumLanes = 16;

template <typename P>
__global__ void sum_partials_kernel(int64_t chunks, int64_t c, const P* part, float* out) {
  __shared__ double lanes[kSumLanes][32];
  const int64_t j = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  double s = 0;
  if (j < c)
    for (int64_t k = threadIdx.y; k < chunks; k += kSumLanes)
      s += static_cast<double>(part[k * c + j]);
  lanes[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y != 0 || j >= c) return;
  double t = 0;
  for (int l = 0; l < kSumLanes; ++l) t += lanes[l][threadIdx.x];
  out[j] = static_cast<float>(t);
}

template <typename P>
void sum_partials(int64_t chunks, int64_t c, const P* part, float* out, const Stream& stream) {
  if (c <= 0) return;
  sum_partials_kernel<P>
      <<<static_cast<unsigned>((c + 31) / 32), dim3(32, kSumLanes), 0, native(stream)>>>(chunks, c,
                                                                                         part, out);
  TFM_CUDA_CHECK_LAUNCH();
}

}  // namespace tfm::cuda::detail
