#include <cmath>

#include "tfm/core/check.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/decode_steps.h"
#include "tfm/ops/cuda/launch.h"

namespace tfm::cuda {

namespace {

// tfm::StepRule's values (ops/decode_steps.h).
constexpr uint8_t kKeep = 0, kNormal = 1, kNoEos = 2, kEosOnly = 3;

__global__ void mask_step_rows_kernel(int64_t v, float* lp, const uint8_t* rules, int32_t pad,
                                      int32_t bos, int32_t eos) {
  const uint8_t rule = rules[blockIdx.x];
  if (rule == kKeep) return;
  float* row = lp + static_cast<int64_t>(blockIdx.x) * v;
  for (int64_t i = threadIdx.x; i < v; i += blockDim.x) {
    bool off = false;
    if (rule == kEosOnly) off = i != eos;
    if (rule == kNormal || rule == kNoEos) off = i == pad || i == bos;
    if (rule == kNoEos) off = off || i == eos;
    if (off) row[i] = -INFINITY;
  }
}

// (value, id) a ranks before (value, id) b: higher value, then lower id; id < 0 is "none".
__device__ __forceinline__ bool before(float a, int ia, float b, int ib) {
  if (ib < 0) return ia >= 0;
  if (ia < 0) return false;
  return a > b || (a == b && ia < ib);
}

// One block a row; round j picks the best entry that ranks after round j − 1's pick. The ranking
// is a strict total order on (value, id) over the non-NaN values, so no pick repeats.
__global__ void top_k_kernel(int64_t v, int64_t k, const float* x, int32_t* ids, float* vals) {
  __shared__ float wv[32];
  __shared__ int wi[32];
  __shared__ float pick_v;
  __shared__ int pick_i;
  const float* row = x + static_cast<int64_t>(blockIdx.x) * v;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  float pv = 0.f;
  int pi = -1;  // the last pick; -1 before the first
  for (int64_t j = 0; j < k; ++j) {
    float bv = 0.f;
    int bi = -1;
    for (int64_t i = threadIdx.x; i < v; i += blockDim.x) {
      const float xv = row[i];
      if (isnan(xv)) continue;
      const int id = static_cast<int>(i);
      if (pi >= 0 && !before(pv, pi, xv, id)) continue;  // not after the last pick
      if (before(xv, id, bv, bi)) {
        bv = xv;
        bi = id;
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (before(ov, oi, bv, bi)) {
        bv = ov;
        bi = oi;
      }
    }
    if (lane == 0) {
      wv[warp] = bv;
      wi[warp] = bi;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < warps; ++w)
        if (before(wv[w], wi[w], bv, bi)) {
          bv = wv[w];
          bi = wi[w];
        }
      pick_v = bv;
      pick_i = bi;
      ids[blockIdx.x * k + j] = bi;
      vals[blockIdx.x * k + j] = bi >= 0 ? bv : NAN;
    }
    __syncthreads();
    pv = pick_v;
    pi = pick_i;
    if (pi < 0) {  // nothing left: the rest of the row's slots say so too
      for (int64_t r = j + 1 + threadIdx.x; r < k; r += blockDim.x) {
        ids[blockIdx.x * k + r] = -1;
        vals[blockIdx.x * k + r] = NAN;
      }
      return;
    }
  }
}

__global__ void mean_over_heads_kernel(int64_t n, int64_t heads, int64_t s, const float* w,
                                       float* out) {
  const int64_t total = n * s, step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t r = i / s, c = i % s;
    float acc = 0.f;
    for (int64_t h = 0; h < heads; ++h) acc = __fadd_rn(acc, w[(r * heads + h) * s + c]);
    out[i] = __fdiv_rn(acc, static_cast<float>(heads));
  }
}

}  // namespace

void mask_step_rows(int64_t rows, int64_t v, float* lp, const uint8_t* rules, int32_t pad,
                    int32_t bos, int32_t eos, const Stream& stream) {
  if (rows <= 0 || v <= 0) return;
  TFM_CHECK(rows <= INT32_MAX) << "cuda mask_step_rows: " << rows << " rows";
  mask_step_rows_kernel<<<static_cast<unsigned>(rows), 256, 0, detail::native(stream)>>>(
      v, lp, rules, pad, bos, eos);
  TFM_CUDA_CHECK_LAUNCH();
}

void top_k_rows(int64_t rows, int64_t v, int64_t k, const float* x, int32_t* ids, float* vals,
                const Stream& stream) {
  if (rows <= 0 || k <= 0) return;
  TFM_CHECK(rows <= INT32_MAX && v <= INT32_MAX) << "cuda top_k_rows: " << rows << " rows of " << v;
  top_k_kernel<<<static_cast<unsigned>(rows), 256, 0, detail::native(stream)>>>(v, k, x, ids, vals);
  TFM_CUDA_CHECK_LAUNCH();
}

void mean_over_heads(int64_t n, int64_t heads, int64_t s, const float* w, float* out,
                     const Stream& stream) {
  if (n <= 0 || s <= 0) return;
  mean_over_heads_kernel<<<blocks_for(n * s), kThreads, 0, detail::native(stream)>>>(n, heads, s, w,
                                                                                     out);
  TFM_CUDA_CHECK_LAUNCH();
}

}  // namespace tfm::cuda
