// The autograd state a tensor carries. Data only: the tape in tfm/autograd/ does the bookkeeping.
#pragma once

#include "tfm/core/tensor.h"

namespace tfm {

struct AutogradMeta {
  Tensor grad;
  // False while `grad` may alias another tensor (a backward returned its incoming gradient
  // unchanged); the first accumulation then copies instead of adding in place.
  bool grad_owned = false;
  bool is_leaf = true;  // parameters and user inputs; op outputs are not leaves
  Shape shape;
  DType dtype = DType::f32;
  Device device = Device::cpu;
  // A parameter's place in a gradient arena (train/param_arena.h), or undefined. When defined,
  // every gradient of the tensor is accumulated there: `grad` is either undefined or this view,
  // and the view holds zeros while `grad` is undefined, so the arena as a whole is always the
  // gradient of all its parameters (zero where none arrived).
  Tensor grad_slot;
  // bf16 mixed precision: the parameter rounded to bf16 (cpu::to_bf16), kept current by the
  // optimiser that owns it (Adam::keep_bf16_copies: rounded in the update's own pass), so linear()
  // multiplies it instead of rounding the weight at every call. Valid only while the parameter's
  // data is at `bf16_copy_of` (a move to another device or arena leaves it unused); a parameter
  // written outside the optimiser's step needs Adam::refresh_bf16_copies().
  Tensor bf16_copy;
  const void* bf16_copy_of = nullptr;
};

}  // namespace tfm
