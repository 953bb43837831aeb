#include <algorithm>
#include <memory>

#include "tfm/core/cuda/device_allocator.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/elementwise.h"
#include "tfm/ops/cuda/launch.h"

namespace tfm::cuda {

namespace {

constexpr float kInvSqrt2Pi = 0.39894228040143267794f;
constexpr float kSqrt2OverPi = 0.79788456080286535588f;

// One grid-stride loop for every pointwise kernel; `f(i)` does element i.
template <typename F>
__global__ void pointwise_kernel(int64_t n, F f) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    f(i);
}

template <typename F>
void launch_pointwise(int64_t n, const Stream& stream, F f) {
  if (n <= 0) return;
  pointwise_kernel<<<blocks_for(n), kThreads, 0, detail::native(stream)>>>(n, f);
  TFM_CUDA_CHECK_LAUNCH();
}

// Column sums in two passes, so that a tall matrix (a batch's 16k token rows) is read by many
// blocks: each thread sums one column over a fixed chunk of kColumnChunk rows, in order, in double;
// then each column's chunk sums are added in double (detail::sum_partials) and rounded once. The
// chunks are fixed (not the GPU's size), so the result is the same run to run and GPU to GPU.
constexpr int64_t kColumnChunk = 64;

__global__ void column_chunk_sums_kernel(int64_t m, int64_t n, const float* a, double* partial) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const int64_t chunks = (m + kColumnChunk - 1) / kColumnChunk;
  for (int64_t c = blockIdx.y; c < chunks; c += gridDim.y) {
    const int64_t i1 = min(m, (c + 1) * kColumnChunk);
    double s = 0;
    for (int64_t i = c * kColumnChunk; i < i1; ++i) s += static_cast<double>(a[i * n + j]);
    partial[c * n + j] = s;
  }
}

}  // namespace

void axpby(int64_t n, float alpha, const float* x, float beta, const float* y, float* out,
           const Stream& stream) {
  launch_pointwise(n, stream, [=] __device__(int64_t i) {
    out[i] = __fmaf_rn(alpha, x[i], __fmul_rn(beta, y[i]));  // the CPU kernel's one fma
  });
}

void mul(int64_t n, const float* a, const float* b, float* out, const Stream& stream) {
  launch_pointwise(n, stream, [=] __device__(int64_t i) { out[i] = a[i] * b[i]; });
}

void scale(int64_t n, float s, const float* x, float* out, const Stream& stream) {
  launch_pointwise(n, stream, [=] __device__(int64_t i) { out[i] = s * x[i]; });
}

void divide(int64_t n, float d, const float* x, float* out, const Stream& stream) {
  launch_pointwise(n, stream, [=] __device__(int64_t i) { out[i] = __fdiv_rn(x[i], d); });
}

void relu_forward(int64_t n, const float* x, float* y, const Stream& stream) {
  launch_pointwise(n, stream, [=] __device__(int64_t i) {
    const float v = x[i];
    y[i] = v < 0.0f ? 0.0f : v;
  });
}

void relu_backward(int64_t n, const float* gy, const float* y, float* gx, const Stream& stream) {
  launch_pointwise(n, stream, [=] __device__(int64_t i) { gx[i] = y[i] > 0.0f ? gy[i] : 0.0f; });
}

void float_to_bf16(int64_t n, const float* x, uint16_t* y, const Stream& stream) {
  launch_pointwise(n, stream, [=] __device__(int64_t i) { y[i] = detail::bf16_bits(x[i]); });
}

void gelu_forward(int64_t n, const float* x, float* y, const Stream& stream) {
  launch_pointwise(n, stream, [=] __device__(int64_t i) {
    const float v = x[i];
    y[i] = v * normcdff(v);
  });
}

void gelu_backward(int64_t n, const float* gy, const float* x, float* gx, const Stream& stream) {
  launch_pointwise(n, stream, [=] __device__(int64_t i) {
    const float v = x[i];
    const float pdf = expf(-0.5f * v * v) * kInvSqrt2Pi;
    gx[i] = gy[i] * (normcdff(v) + v * pdf);
  });
}

void input_activation_forward(Activation act, int64_t n, const float* x, float* y,
                              const Stream& stream) {
  if (act == Activation::gelu) gelu_forward(n, x, y, stream);
  if (act == Activation::silu)
    launch_pointwise(n, stream, [=] __device__(int64_t i) {
      const float v = x[i];
      y[i] = v / (1.0f + expf(-v));
    });
  if (act == Activation::gelu_tanh)
    launch_pointwise(n, stream, [=] __device__(int64_t i) {
      const float v = x[i];
      y[i] = 0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
    });
}

void input_activation_backward(Activation act, int64_t n, const float* gy, const float* x,
                               float* gx, const Stream& stream) {
  if (act == Activation::gelu) gelu_backward(n, gy, x, gx, stream);
  if (act == Activation::silu)
    launch_pointwise(n, stream, [=] __device__(int64_t i) {
      const float v = x[i], s = 1.0f / (1.0f + expf(-v));
      gx[i] = gy[i] * s * (1.0f + v * (1.0f - s));
    });
  if (act == Activation::gelu_tanh)
    launch_pointwise(n, stream, [=] __device__(int64_t i) {
      const float v = x[i], t = tanhf(kSqrt2OverPi * (v + 0.044715f * v * v * v));
      const float du = kSqrt2OverPi * (1.0f + 3.0f * 0.044715f * v * v);
      gx[i] = gy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
    });
}

void column_sums(int64_t m, int64_t n, const float* a, float* out, const Stream& stream) {
  if (n <= 0) return;
  // Consecutive threads read consecutive columns of a row: coalesced.
  const int blocks = static_cast<int>((n + kThreads - 1) / kThreads);
  const int64_t chunks = std::max<int64_t>(1, (m + kColumnChunk - 1) / kColumnChunk);
  // Freed once queued: the caching allocator hands the block out again only to later work on
  // the one stream.
  std::shared_ptr<void> buf =
      device_allocator().allocate(static_cast<size_t>(chunks * n) * sizeof(double));
  auto* partial = static_cast<double*>(buf.get());
  if (m <= 0) {
    TFM_CUDA_CHECK(cudaMemsetAsync(partial, 0, static_cast<size_t>(n) * sizeof(double),
                                   detail::native(stream)));
  } else {
    const dim3 grid(static_cast<unsigned>(blocks),
                    static_cast<unsigned>(std::min<int64_t>(chunks, 65535)));
    column_chunk_sums_kernel<<<grid, kThreads, 0, detail::native(stream)>>>(m, n, a, partial);
    TFM_CUDA_CHECK_LAUNCH();
  }
  detail::sum_partials(chunks, n, static_cast<const double*>(partial), out, stream);
}

}  // namespace tfm::cuda
