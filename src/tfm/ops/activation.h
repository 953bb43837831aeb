// Pointwise activations with autograd, and the Activation tag that linear() fuses into its GEMM.
#pragma once

#include "tfm/core/tensor.h"
#include "tfm/types.h"

namespace tfm {

Tensor relu(const Tensor& x);  // max(x, 0); gradient 0 at x = 0
Tensor gelu(const Tensor& x);  // x·Φ(x); gradient Φ(x) + x·φ(x)
Tensor silu(const Tensor& x);  // x·σ(x); gradient σ(x)·(1 + x·(1 - σ(x)))
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), GPT-2's gelu_new
Tensor gelu_tanh(const Tensor& x);

}  // namespace tfm
