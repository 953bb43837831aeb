#include "tfm/ops/kernel_args.h"

#include <cmath>

#include "tfm/core/check.h"

namespace tfm::kernels {

AdamUpdate adam_update_for_step(int64_t step, double lr, double beta1, double beta2, double eps,
                                double weight_decay, bool decoupled, double grad_scale) {
  TFM_CHECK(step >= 1) << "adam: update number must be >= 1, got " << step;
  // The bias corrections in double, each scalar rounded to f32 once: every backend gets the same
  // f32 scalars, so equal inputs give equal bits on each.
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  AdamUpdate a;
  a.step_size = static_cast<float>(lr / bc1);
  a.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  a.beta1 = static_cast<float>(beta1);
  a.beta2 = static_cast<float>(beta2);
  a.eps = static_cast<float>(eps);
  a.weight_decay = static_cast<float>(weight_decay);
  a.coupled_wd = !decoupled && a.weight_decay != 0.0f;
  a.decay = decoupled ? static_cast<float>(1.0 - lr * weight_decay) : 1.0f;
  a.grad_scale = static_cast<float>(grad_scale);
  return a;
}

}  // namespace tfm::kernels
