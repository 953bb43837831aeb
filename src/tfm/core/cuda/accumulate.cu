// Gradient accumulation on the device: the one arithmetic core/ needs there (Tensor::add_, which
// the autograd tape calls when a second gradient reaches a tensor). One f32 add an element, as
// on the CPU, so the two agree to the bit.
#include "tfm/core/cuda/accumulate.h"

#include "tfm/core/cuda/check.h"

namespace tfm::cuda {

namespace {

__global__ void add_into_kernel(float* dst, const float* src, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = __fadd_rn(dst[i], src[i]);
}

}  // namespace

void add_into(float* dst, const float* src, int64_t n) {
  if (n <= 0) return;
  constexpr int kThreads = 256;
  const long long blocks = (n + kThreads - 1) / kThreads;
  add_into_kernel<<<static_cast<unsigned>(blocks < 8192 ? blocks : 8192), kThreads>>>(dst, src, n);
  TFM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tfm::cuda
