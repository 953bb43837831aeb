// The global gradient norm that clipping and the training log use.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tfm/core/tensor.h"

namespace tfm {

// sqrt(Σ over parameters of Σ g²), accumulated in double; parameters without a gradient count as
// zero. NaN or inf when any gradient element is not finite. The chunking depends only on the
// sizes and the thread count, so the result is reproducible run to run.
double global_grad_norm(const std::vector<std::pair<std::string, Tensor>>& params);

// The factor torch.nn.utils.clip_grad_norm_ applies: max_norm / (norm + 1e-6) when that is below
// 1, else 1. max_norm <= 0 disables clipping.
double clip_coefficient(double norm, double max_norm);

}  // namespace tfm
