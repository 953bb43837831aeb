// Fused Adam/AdamW step on the device: one kernel reads g, m, v, p once and writes m, v, p,
// with the f32 arithmetic of kernels::AdamUpdate operation for operation (ops/kernel_args.h:
// four explicit fused multiply-adds, nothing else contracted), so for the same inputs the CUDA step
// gives the CPU step's bits.
#pragma once

#include <cstdint>
#include <vector>

#include "tfm/core/cuda/runtime.h"
#include "tfm/ops/kernel_args.h"

namespace tfm::cuda {

using kernels::AdamUpdate;  // kernels::adam_update_for_step builds it

// One update of n parameters p with gradient g and moments m, v (device memory, f32).
void adam_step(int64_t n, float* p, const float* g, float* m, float* v, const AdamUpdate& params,
               const Stream& stream = default_stream());

// One parameter tensor's device buffers for the multi-tensor step. p_bf16, when set, receives
// the updated p rounded to bf16 (cpu::to_bf16's bits): the weight copy bf16 training multiplies.
struct AdamTensor {
  int64_t n = 0;
  float* p = nullptr;
  const float* g = nullptr;
  float* m = nullptr;
  float* v = nullptr;
  uint16_t* p_bf16 = nullptr;
};

// The same update for every tensor in one launch (a model has hundreds of parameter tensors, and
// a launch per tensor costs more than the update of a small one). Each block takes a fixed
// 4096-element chunk of one tensor; the chunk table is built on the host and copied over.
// Results are those of adam_step on each tensor, bit for bit.
void adam_step_multi(const std::vector<AdamTensor>& tensors, const AdamUpdate& params,
                     const Stream& stream = default_stream());

}  // namespace tfm::cuda
