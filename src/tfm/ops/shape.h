// Shape ops with autograd. The Tensor methods of the same names are raw views without autograd;
// model code uses these. They accept any dtype (only floating tensors can carry gradients).
// A result is a view of x when no data has to move, otherwise a fresh contiguous tensor.
#pragma once

#include <cstdint>
#include <vector>

#include "tfm/core/tensor.h"

namespace tfm {

// x viewed in a new shape (one dimension may be -1); a copy first when x is not contiguous.
Tensor reshape(const Tensor& x, const Shape& shape);
// Axes d0 and d1 swapped (negative axes count from the end); the result is contiguous.
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
// Elements [start, start + length) of `axis`; contiguous.
Tensor narrow(const Tensor& x, int64_t axis, int64_t start, int64_t length);
// Inputs joined along `axis`; all other axes must agree. (..., Σ sizes, ...)
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
// Parts of x along `axis` with the given sizes (summing to x.size(axis)); each contiguous. The
// backward joins the parts' gradients, zeros for parts nothing depended on.
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis);

}  // namespace tfm
