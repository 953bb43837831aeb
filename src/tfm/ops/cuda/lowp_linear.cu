#include <memory>

#include "tfm/core/check.h"
#include "tfm/core/cuda/device_allocator.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/elementwise.h"
#include "tfm/ops/cuda/gemm.h"
#include "tfm/ops/cuda/launch.h"
#include "tfm/ops/cuda/lowp_linear.h"

namespace tfm::cuda {

namespace {

// One block a row of q (rows ≥ m are padding: zeros). Every rounding is written out as
// cpu::quantize_rows_u8 does it, so the integers are the CPU's.
__global__ void quantize_rows_s8_kernel(int64_t m, int64_t k, const float* x, int8_t* q,
                                        int64_t ldq, float* scale, int32_t* zero,
                                        DeviceFault* fault) {
  __shared__ float scratch[32];
  const int64_t r = blockIdx.x;
  int8_t* out = q + r * ldq;
  if (r >= m) {  // the whole block takes this branch: no barrier is skipped by some threads only
    for (int64_t j = threadIdx.x; j < ldq; j += blockDim.x) out[j] = 0;
    return;
  }
  const float* row = x + r * k;
  float lo = 0.f, hi = 0.f;
  int bad = 0;
  for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
    const float v = row[j];
    bad |= !isfinite(v);
    lo = fminf(lo, v);
    hi = fmaxf(hi, v);
  }
  hi = detail::block_max(hi, scratch);
  lo = -detail::block_max(-lo, scratch);
  if (__syncthreads_or(bad)) {
    if (threadIdx.x == 0) {
      detail::record_fault(fault, FaultSite::int8_input_row, r, r, m);
      scale[r] = 1.f;
      zero[r] = 128;
    }
    for (int64_t j = threadIdx.x; j < ldq; j += blockDim.x) out[j] = 0;
    return;
  }
  const float s = hi > lo ? __fdiv_rn(__fsub_rn(hi, lo), 255.f) : 1.f;
  const float inv = __fdiv_rn(1.f, s);
  const float zp = fminf(fmaxf(rintf(__fmul_rn(-lo, inv)), 0.f), 255.f);
  for (int64_t j = threadIdx.x; j < ldq; j += blockDim.x) {
    int8_t v = 0;
    if (j < k) {
      const float u = fminf(fmaxf(__fadd_rn(rintf(__fmul_rn(row[j], inv)), zp), 0.f), 255.f);
      v = static_cast<int8_t>(static_cast<int32_t>(u) - 128);
    }
    out[j] = v;
  }
  if (threadIdx.x == 0) {
    scale[r] = s;
    zero[r] = static_cast<int32_t>(zp);
  }
}

constexpr int kTile = 16;

// acc[i, j] = Σ_w dp4a(q[i, w], w[j, w]) over kw 4-byte words: a 16 × 16 tile of outputs a block,
// 16 words of K at a time through shared memory (the +1 column keeps the transposed reads of
// `ws` off one bank).
__global__ void gemm_s8_simple_kernel(int64_t m, int64_t n, int64_t kw, const int32_t* q,
                                      const int32_t* w, int32_t* acc, int64_t ldc) {
  __shared__ int32_t qs[kTile][kTile + 1], ws[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t i = static_cast<int64_t>(blockIdx.y) * kTile + ty;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  const int64_t wrow = static_cast<int64_t>(blockIdx.x) * kTile + ty;  // the weight row ty loads
  int32_t s = 0;
  for (int64_t k0 = 0; k0 < kw; k0 += kTile) {
    const int64_t kk = k0 + tx;
    qs[ty][tx] = i < m && kk < kw ? q[i * kw + kk] : 0;
    ws[ty][tx] = wrow < n && kk < kw ? w[wrow * kw + kk] : 0;
    __syncthreads();
#pragma unroll
    for (int t = 0; t < kTile; ++t) s = __dp4a(qs[ty][t], ws[tx][t], s);
    __syncthreads();
  }
  if (i < m && j < n) acc[i * ldc + j] = s;
}

// y = post(sx · sw · (acc_s8 − (zero − 128) · sums) + bias); acc_s8 − (zero − 128) · sums is the
// CPU's acc_u8 − zero · sums exactly. (sx · sw) · f + bias as one fma, as GCC contracts the CPU's.
__global__ void dequantize_kernel(int64_t m, int64_t n, const int32_t* acc, int64_t ldc,
                                  const float* sx, const int32_t* zero, const float* sw,
                                  const int32_t* sums, const float* bias, bool relu, float* y) {
  const int64_t total = m * n, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += stride) {
    const int64_t i = e / n, j = e - i * n;
    const int32_t a = acc[i * ldc + j] - (zero[i] - 128) * sums[j];
    const float ss = __fmul_rn(sx[i], sw[j]);
    const float f = static_cast<float>(a);
    const float v = bias != nullptr ? __fmaf_rn(ss, f, bias[j]) : __fmul_rn(ss, f);
    y[e] = relu && v < 0.f ? 0.f : v;
  }
}

}  // namespace

void quantize_rows_s8(int64_t m, int64_t rows, int64_t k, const float* x, int8_t* q, int64_t ldq,
                      float* scale, int32_t* zero, const Stream& stream) {
  TFM_CHECK(m >= 0 && rows >= m && k > 0 && ldq >= k && rows < (int64_t{1} << 31))
      << "cuda quantize_rows_s8: bad shape m=" << m << " rows=" << rows << " K=" << k
      << " ldq=" << ldq;
  if (rows == 0) return;
  quantize_rows_s8_kernel<<<static_cast<unsigned>(rows), row_threads(ldq), 0,
                            detail::native(stream)>>>(m, k, x, q, ldq, scale, zero,
                                                      device_fault_record());
  TFM_CUDA_CHECK_LAUNCH();
}

void gemm_s8_simple(int64_t m, int64_t n, int64_t k, const int8_t* q, const int8_t* w, int32_t* acc,
                    int64_t ldc, const Stream& stream) {
  TFM_CHECK(m >= 0 && n >= 0 && k > 0 && k % kInt8Pad == 0 && ldc >= n &&
            (m + kTile - 1) / kTile < 65536)
      << "cuda gemm_s8_simple: bad shape " << m << "x" << n << "x" << k << " ldc=" << ldc;
  if (m == 0 || n == 0) return;
  const dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
                  static_cast<unsigned>((m + kTile - 1) / kTile));
  gemm_s8_simple_kernel<<<grid, dim3(kTile, kTile), 0, detail::native(stream)>>>(
      m, n, k / 4, reinterpret_cast<const int32_t*>(q), reinterpret_cast<const int32_t*>(w), acc,
      ldc);
  TFM_CUDA_CHECK_LAUNCH();
}

void linear_forward_int8(int64_t m, int64_t n, int64_t k, const float* x, const int8_t* w,
                         const float* w_scales, const int32_t* w_sums, const float* bias,
                         Activation post, float* y, Int8Gemm path, const Stream& stream) {
  TFM_CHECK(m >= 0 && n > 0 && k > 0)
      << "cuda int8 linear: bad shape " << m << "x" << n << "x" << k;
  if (m == 0) return;
  const int64_t kp = int8_padded(k), np = int8_padded(n), mp = int8_padded_rows(m);
  // Scratch freed once queued: the caching allocator hands a block out again only to work queued
  // after this on the one stream.
  CudaCachingAllocator& alloc = device_allocator();
  const std::shared_ptr<void> q_buf = alloc.allocate(static_cast<size_t>(mp * kp));
  const std::shared_ptr<void> row_buf = alloc.allocate(static_cast<size_t>(m) * 8);
  const std::shared_ptr<void> acc_buf = alloc.allocate(static_cast<size_t>(mp * np) * 4);
  auto* q = static_cast<int8_t*>(q_buf.get());
  auto* sx = static_cast<float*>(row_buf.get());
  auto* zero = reinterpret_cast<int32_t*>(sx + m);
  auto* acc = static_cast<int32_t*>(acc_buf.get());
  quantize_rows_s8(m, mp, k, x, q, kp, sx, zero, stream);
  bool done = false;
  if (path != Int8Gemm::simple) done = gemm_s8_cublaslt(mp, np, kp, q, kp, w, kp, acc, np, stream);
  TFM_CHECK(done || path != Int8Gemm::cublaslt)
      << "cuda int8 linear: cuBLASLt has no int8 algorithm for " << mp << "x" << np << "x" << kp;
  if (!done) gemm_s8_simple(m, n, kp, q, w, acc, np, stream);
  dequantize_kernel<<<blocks_for(m * n), kThreads, 0, detail::native(stream)>>>(
      m, n, acc, np, sx, zero, w_scales, w_sums, bias, post == Activation::relu, y);
  TFM_CUDA_CHECK_LAUNCH();
  input_activation_forward(post, m * n, y, y, stream);  // gelu, silu, gelu_tanh; relu: above
}

}  // namespace tfm::cuda
