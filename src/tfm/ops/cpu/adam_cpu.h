// The CPU Adam/AdamW update of one contiguous run of parameters (train/optimizer.h steps the
// whole parameter arena through it). The arithmetic per element, the contract ops/cuda/adam.h
// follows too:
//   gi    = g·gs                       (+ wd·p, fused, with coupled weight decay)
//   m     = fma(β1, m, (1 - β1)·gi)
//   v     = fma(β2, v, ((1 - β2)·gi)·gi)
//   denom = fma(sqrt(v), inv_sqrt_bc2, eps)
//   p     = fma(p, decay, -(step_size·m / denom))
// every other operation rounded on its own. Those four fusions are what GCC made of the plain
// expressions the update was first written in, so written out they keep its bits and no longer
// depend on what the compiler chooses to contract.
#pragma once

#include <cstdint>

namespace tfm::cpu {

// The per-step scalars (train/optimizer.cpp computes them from the step number, lr and options).
struct AdamUpdate {
  float step_size = 0;     // lr / (1 - β1^t)
  float inv_sqrt_bc2 = 0;  // 1 / sqrt(1 - β2^t)
  float beta1 = 0, beta2 = 0, eps = 0;
  float weight_decay = 0;  // coupled L2 (Adam): added to the gradient when coupled_wd
  bool coupled_wd = false;
  float decay = 1;       // AdamW: 1 - lr·λ
  float grad_scale = 1;  // each gradient is used multiplied by this
};

// Updates p, m, v (n elements each) in place from the gradient g, on the calling thread: eight
// elements at a time with AVX2 (sqrt and division are IEEE-exact, so the vector and the scalar
// tail give the same bits), the rest one by one.
void adam_update(const AdamUpdate& a, int64_t n, float* p, const float* g, float* m, float* v);

}  // namespace tfm::cpu
