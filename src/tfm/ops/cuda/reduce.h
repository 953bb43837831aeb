// Device reductions for the training loop: the global gradient norm (train/grad_norm.h) without
// copying gradients to the host. Accumulation in double, in a fixed order that depends only on
// the sizes, so results are the same bits run to run.
#pragma once

#include <cstdint>

#include "tfm/core/cuda/runtime.h"

namespace tfm::cuda {

// *acc += Σ_i x[i]² (device pointers; acc is one device double). Queued on `stream`; several
// calls into one acc add in call order. NaN/inf propagate.
void accumulate_sum_of_squares(int64_t n, const float* x, double* acc,
                               const Stream& stream = default_stream());

// Σ_i x[i]² of a device array, returned to the host (waits for the stream).
double sum_of_squares(int64_t n, const float* x, const Stream& stream = default_stream());

// *out = (float)(scale · Σ_i x[i]), the sum in double (reduce.h's sum and mean). out is one
// device float.
void sum_scaled(int64_t n, const float* x, double scale, float* out,
                const Stream& stream = default_stream());

// out[r] = Σ_c x[r·cols + c], in double, rounded once (sum_last).
void sum_rows(int64_t rows, int64_t cols, const float* x, float* out,
              const Stream& stream = default_stream());

// out[r·cols + c] = s · g[r] (the backward of sum, mean and sum_last).
void broadcast_rows(int64_t rows, int64_t cols, const float* g, float s, float* out,
                    const Stream& stream = default_stream());

}  // namespace tfm::cuda
