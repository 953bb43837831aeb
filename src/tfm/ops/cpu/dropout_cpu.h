// CPU kernel for inverted dropout.
#pragma once

#include <cstdint>

#include "tfm/core/rng.h"

namespace tfm::cpu {

// out[i] = x[i] / (1 - p) when stream.uniform(i) >= p, else 0, for i < n. The mask is a pure
// function of (stream, i): the forward and the backward (applied to the gradient) rebuild the
// same mask, for any thread count. p in [0, 1).
template <typename T>
void dropout_apply(int64_t n, const T* x, const RandomStream& stream, double p, T* out);

}  // namespace tfm::cpu
