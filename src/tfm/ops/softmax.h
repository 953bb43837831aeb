// Softmax and log-softmax over the last axis, with autograd.
#pragma once

#include "tfm/core/tensor.h"

namespace tfm {

Tensor softmax(const Tensor& x);      // (..., C) -> (..., C), rows sum to 1
Tensor log_softmax(const Tensor& x);  // (..., C) -> (..., C), log of softmax computed stably

}  // namespace tfm
