// CUDA kernels for softmax cross-entropy over a vocabulary, fused as on the CPU
// (ops/cpu/cross_entropy_cpu.h, same arguments and semantics): the forward keeps each row's max
// and log Σ exp(x - max) and never writes an (N, V) softmax; the backward rebuilds it.
// Pointers are device memory; work is queued on `stream`.
#pragma once

#include <cstdint>

#include "tfm/core/cuda/runtime.h"
#include "tfm/ops/kernel_args.h"

namespace tfm::cuda {

using kernels::CrossEntropyTotals;

// logits (N, V), targets (N) already checked to lie in [0, V) or equal ignore_index. A kept
// row's loss is (1 - s)(lse - x_t) + s(lse - mean_V(x)). Writes row_max/row_logsum (N) (0 for
// ignored rows). The totals are reduced on the device in a fixed order and copied back, so this
// call waits for the stream.
CrossEntropyTotals cross_entropy_forward(int64_t n, int64_t v, const float* logits,
                                         const int32_t* targets, int64_t ignore_index,
                                         double smoothing, float* row_max, float* row_logsum,
                                         const Stream& stream = default_stream());

// dlogits = scale * (softmax - q) on kept rows, q = (1 - s) onehot(target) + s / V; 0 on
// ignored rows.
void cross_entropy_backward(int64_t n, int64_t v, const float* logits, const int32_t* targets,
                            int64_t ignore_index, double smoothing, const float* row_max,
                            const float* row_logsum, double scale, float* dlogits,
                            const Stream& stream = default_stream());

}  // namespace tfm::cuda
