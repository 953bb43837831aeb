// Sums with autograd. Accumulation is in double and deterministic: the same bits for any thread
// count (fixed chunks summed in a fixed order).
#pragma once

#include "tfm/core/tensor.h"

namespace tfm {

Tensor sum(const Tensor& x);       // all elements → shape {} scalar
Tensor mean(const Tensor& x);      // all elements → shape {}; x must not be empty
Tensor sum_last(const Tensor& x);  // (..., C) → (...)

}  // namespace tfm
