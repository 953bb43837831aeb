// Batched matrix product with optional transposed operands, with autograd.
#pragma once

#include "tfm/core/tensor.h"

namespace tfm {

// a (..., M, K), or (..., K, M) read as its transpose when trans_a; b (..., K, N), or (..., N, K)
// when trans_b. The leading batch dimensions of a and b must be identical (no broadcasting);
// 2-D operands are one matrix. Returns (..., M, N).
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

}  // namespace tfm
