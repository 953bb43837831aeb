#include <cmath>

#include "tfm/core/check.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/dropout.h"
#include "tfm/ops/cuda/launch.h"

namespace tfm::cuda {

namespace {

// One Philox block (four elements) per iteration, as the CPU draws them.
__global__ void dropout_kernel(int64_t n, const float* x, uint64_t seed, uint64_t stream_id,
                               uint32_t threshold, float scale, float* out) {
  const int64_t blocks = (n + 3) / 4;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks;
       b += stride) {
    const uint4 w = detail::philox_block(seed, stream_id, static_cast<uint64_t>(b));
    const int64_t base = 4 * b;
    const int m = n - base < 4 ? static_cast<int>(n - base) : 4;
    for (int l = 0; l < m; ++l)
      out[base + l] = (detail::word(w, l) >> 8) >= threshold ? x[base + l] * scale : 0.0f;
  }
}

}  // namespace

void dropout_apply(int64_t n, const float* x, const RandomStream& rng, double p, float* out,
                   const Stream& stream) {
  TFM_CHECK(p >= 0.0 && p < 1.0) << "cuda dropout: p must be in [0, 1), got " << p;
  if (n <= 0) return;
  // uniform(i) >= p  <=>  top 24 bits >= ceil(p * 2^24): the CPU kernel's exact integer test.
  const auto threshold = static_cast<uint32_t>(std::ceil(p * 16777216.0));
  const auto scale = static_cast<float>(1.0 / (1.0 - p));
  dropout_kernel<<<blocks_for((n + 3) / 4), kThreads, 0, detail::native(stream)>>>(
      n, x, rng.seed(), rng.id(), threshold, scale, out);
  TFM_CUDA_CHECK_LAUNCH();
}

}  // namespace tfm::cuda
