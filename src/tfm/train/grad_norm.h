// The global gradient norm that clipping and the training log use.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tfm/core/tensor.h"
#include "tfm/train/param_arena.h"

namespace tfm {

// sqrt(Σ over parameters of Σ g²), accumulated in double; parameters without a gradient count as
// zero. NaN or inf when any gradient element is not finite. Each parameter's gradient is cut into
// fixed 32K-element chunks from its own start, the chunks are summed in one parallel pass (over
// the flat gradient arena when the parameters live in one) and their partial sums added in order:
// the result depends only on the sizes, not on the thread count or on the arena's gaps.
double global_grad_norm(const std::vector<std::pair<std::string, Tensor>>& params);
// The same over a gradient arena's flat buffer (its slots; a slot without a gradient holds zeros
// and adds nothing), e.g. after a data-parallel all-reduce has written the buffer.
double global_grad_norm(const ParameterArena& arena);

// The factor torch.nn.utils.clip_grad_norm_ applies: max_norm / (norm + 1e-6) when that is below
// 1, else 1. max_norm <= 0 disables clipping.
double clip_coefficient(double norm, double max_norm);

}  // namespace tfm
