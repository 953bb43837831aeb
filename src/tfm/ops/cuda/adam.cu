#include <cmath>

#include "tfm/core/check.h"
#include "tfm/ops/cuda/adam.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/launch.h"

namespace tfm::cuda {

namespace {

__global__ void adam_kernel(int64_t n, float* p, const float* g, float* m, float* v,
                            AdamStepParams a) {
  const bool coupled_wd = !a.decoupled && a.weight_decay != 0.0f;
  const float one_b1 = 1.0f - a.beta1, one_b2 = 1.0f - a.beta2;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    // Each line is the CPU's expression with every rounding made explicit.
    const float gg = __fmul_rn(g[i], a.grad_scale);
    const float pi = p[i];
    const float gi = coupled_wd ? __fadd_rn(gg, __fmul_rn(a.weight_decay, pi)) : gg;
    const float mi = __fadd_rn(__fmul_rn(a.beta1, m[i]), __fmul_rn(one_b1, gi));
    const float vi = __fadd_rn(__fmul_rn(a.beta2, v[i]), __fmul_rn(__fmul_rn(one_b2, gi), gi));
    const float denom = __fadd_rn(__fmul_rn(__fsqrt_rn(vi), a.inv_sqrt_bc2), a.eps);
    p[i] = __fsub_rn(__fmul_rn(pi, a.decay), __fdiv_rn(__fmul_rn(a.step_size, mi), denom));
    m[i] = mi;
    v[i] = vi;
  }
}

}  // namespace

AdamStepParams adam_step_params(int64_t step, double lr, double beta1, double beta2, double eps,
                                double weight_decay, bool decoupled, double grad_scale) {
  TFM_CHECK(step >= 1) << "adam_step_params: step must be >= 1, got " << step;
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  AdamStepParams a;
  a.step_size = static_cast<float>(lr / bc1);
  a.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  a.beta1 = static_cast<float>(beta1);
  a.beta2 = static_cast<float>(beta2);
  a.eps = static_cast<float>(eps);
  a.weight_decay = static_cast<float>(weight_decay);
  a.decoupled = decoupled;
  a.decay = decoupled ? static_cast<float>(1.0 - lr * weight_decay) : 1.0f;
  a.grad_scale = static_cast<float>(grad_scale);
  return a;
}

void adam_step(int64_t n, float* p, const float* g, float* m, float* v,
               const AdamStepParams& params, const Stream& stream) {
  if (n <= 0) return;
  adam_kernel<<<blocks_for(n), kThreads, 0, detail::native(stream)>>>(n, p, g, m, v, params);
  TFM_CUDA_CHECK_LAUNCH();
}

}  // namespace tfm::cuda
