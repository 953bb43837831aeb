// Pointwise activations with autograd, and the Activation tag that linear() fuses into its GEMM.
#pragma once

#include "tfm/core/tensor.h"
#include "tfm/types.h"

namespace tfm {

Tensor relu(const Tensor& x);  // max(x, 0); gradient 0 at x = 0
Tensor gelu(const Tensor& x);  // x·Φ(x); gradient Φ(x) + x·φ(x)

}  // namespace tfm
