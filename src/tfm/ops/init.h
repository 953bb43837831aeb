// Parameter initialisers: in place, no autograd, reproducible. Each call takes exactly one
// gen.next_stream() and sets element i (row-major) from element i of that stream, so the values
// depend on (seed, stream position) only, never on the thread count.
#pragma once

#include "tfm/core/rng.h"
#include "tfm/core/tensor.h"

namespace tfm {

// Uniform in [lo, hi): element i = lo + (hi - lo) * stream.uniform_f64(i) (then rounded to t's
// dtype, which for f32 can reach hi). Needs lo <= hi.
void uniform_(Tensor& t, double lo, double hi, Generator& gen);
// Normal: element i = mean + std * stream.normal(i). Needs std >= 0.
void normal_(Tensor& t, double mean, double std, Generator& gen);
// Glorot/Xavier uniform as PyTorch: t is (fan_out, fan_in, ...) with the trailing axes a
// receptive field; bound = gain * sqrt(6 / (fan_in + fan_out)), values in [-bound, bound).
void xavier_uniform_(Tensor& t, Generator& gen, double gain = 1.0);

}  // namespace tfm
