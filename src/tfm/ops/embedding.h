// Token embedding lookup with autograd.
#pragma once

#include <cstdint>

#include "tfm/core/tensor.h"

namespace tfm {

// Row gather: ids i32 (...), weight (V, C) → (..., C). The gradient scatter-adds into the rows of
// weight, deterministically (each row summed in position order); the row padding_idx gets no
// gradient (padding_idx < 0: no padding row). An id outside [0, V) is an error naming the id, its
// position and V.
Tensor embedding(const Tensor& ids, const Tensor& weight, int64_t padding_idx = -1);

}  // namespace tfm
