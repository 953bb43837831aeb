// Elementwise arithmetic on tensors of one shape, with autograd.
#pragma once

#include "tfm/core/tensor.h"

namespace tfm {

Tensor add(const Tensor& a, const Tensor& b);  // a + b
Tensor sub(const Tensor& a, const Tensor& b);  // a - b
Tensor mul(const Tensor& a, const Tensor& b);  // a * b
Tensor scale(const Tensor& a, double s);       // s * a

// In place, no autograd (gradient accumulation, optimiser updates): a += alpha * b.
void add_(Tensor& a, const Tensor& b, double alpha = 1.0);
// In place, no autograd: a /= d (a true division, not a multiplication by 1/d).
void div_(Tensor& a, double d);

}  // namespace tfm
