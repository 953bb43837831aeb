// Fused Adam/AdamW step on the device: one kernel reads g, m, v, p once and writes m, v, p,
// with the CPU update's f32 arithmetic operation for operation (ops/cpu/adam_cpu.h: four
// explicit fused multiply-adds, nothing else contracted), so for the same inputs the CUDA step
// gives the CPU step's bits.
#pragma once

#include <cstdint>
#include <vector>

#include "tfm/core/cuda/runtime.h"

namespace tfm::cuda {

// The per-step scalars, computed on the host exactly as Adam::step does.
struct AdamStepParams {
  float step_size = 0;     // lr / (1 - β1^t)
  float inv_sqrt_bc2 = 0;  // 1 / sqrt(1 - β2^t)
  float beta1 = 0, beta2 = 0, eps = 0;
  float weight_decay = 0;  // coupled L2 (Adam) when !decoupled
  bool decoupled = false;
  float decay = 1;       // AdamW: 1 - lr·λ
  float grad_scale = 1;  // each gradient is used multiplied by this
};

// Builds the scalars for step number `step` (1-based) as Adam::step(lr, grad_scale) does.
AdamStepParams adam_step_params(int64_t step, double lr, double beta1, double beta2, double eps,
                                double weight_decay, bool decoupled, double grad_scale);

// One update of n parameters p with gradient g and moments m, v (device memory, f32).
void adam_step(int64_t n, float* p, const float* g, float* m, float* v,
               const AdamStepParams& params, const Stream& stream = default_stream());

// One parameter tensor's device buffers for the multi-tensor step.
struct AdamTensor {
  int64_t n = 0;
  float* p = nullptr;
  const float* g = nullptr;
  float* m = nullptr;
  float* v = nullptr;
};

// The same update for every tensor in one launch (a model has hundreds of parameter tensors, and
// a launch per tensor costs more than the update of a small one). Each block takes a fixed
// 4096-element chunk of one tensor; the chunk table is built on the host and copied over.
// Results are those of adam_step on each tensor, bit for bit.
void adam_step_multi(const std::vector<AdamTensor>& tensors, const AdamStepParams& params,
                     const Stream& stream = default_stream());

}  // namespace tfm::cuda
