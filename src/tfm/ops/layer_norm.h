// Layer normalisation over the last axis, alone or fused with the residual add before it.
#pragma once

#include "tfm/core/tensor.h"

namespace tfm {

// Over the last axis C of x (..., C): y = (x - mean) * rstd * gamma + beta with
// rstd = 1 / sqrt(var + eps) and the biased variance (PyTorch semantics). gamma, beta: (C).
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps);

// The residual stream's step: sum = x + residual; y = layer_norm(sum). Both are returned because
// the stream carries `sum` on; gradients flow through both outputs.
struct AddLayerNormResult {
  Tensor y;
  Tensor sum;
};
AddLayerNormResult add_layer_norm(const Tensor& x, const Tensor& residual, const Tensor& gamma,
                                  const Tensor& beta, double eps);

}  // namespace tfm
