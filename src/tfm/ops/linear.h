// Fully connected layer with the activation fused into the GEMM, with autograd.
#pragma once

#include "tfm/core/tensor.h"
#include "tfm/ops/activation.h"

namespace tfm {

// y = act(x·weightᵀ + bias). x (..., in); weight (out, in), PyTorch's nn.Linear layout; bias (out)
// or an undefined Tensor. Returns (..., out). All operands share one floating dtype.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Activation act = Activation::none);

}  // namespace tfm
