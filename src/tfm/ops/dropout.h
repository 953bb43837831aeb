// Inverted dropout with autograd, reproducible from a Generator.
#pragma once

#include "tfm/core/rng.h"
#include "tfm/core/tensor.h"

namespace tfm {

// When training and p > 0: keeps element i (row-major) iff stream.uniform(i) >= p and scales kept
// elements by 1 / (1 - p), where stream is the one gen->next_stream() this call takes
// (default_generator() when gen is null). The mask depends only on (seed, stream, i), never on
// the thread count, and the backward rebuilds it from the stream instead of storing it.
// When !training or p == 0: returns x itself, records nothing and takes no stream.
// p must be in [0, 1).
Tensor dropout(const Tensor& x, double p, bool training, Generator* gen = nullptr);

}  // namespace tfm
