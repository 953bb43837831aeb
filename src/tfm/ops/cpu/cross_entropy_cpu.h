// CPU kernels for softmax cross-entropy over a vocabulary, fused: the forward never writes an
// (N, V) log-softmax; it keeps each row's max and log Σ exp(x - max) (together the row's
// logsumexp) and the backward rebuilds softmax from them.
#pragma once

#include <cstdint>

#include "tfm/core/cpu_isa.h"
#include "tfm/ops/kernel_args.h"

namespace tfm::cpu {

using kernels::CrossEntropyTotals;

// logits (N, V), targets (N) already checked to lie in [0, V) or equal ignore_index. A kept
// row's loss is (1 - s) * (lse - x_t) + s * (lse - mean_V(x)), s = smoothing: PyTorch's
// label-smoothed cross-entropy with target distribution (1 - s) onehot + s / V. Writes
// row_max/row_logsum (N) (0 for ignored rows). Totals add up rows in order, whatever the thread
// count.
template <typename T>
CrossEntropyTotals cross_entropy_forward(int64_t n, int64_t v, const T* logits,
                                         const int32_t* targets, int64_t ignore_index,
                                         double smoothing, T* row_max, T* row_logsum);

// dlogits = scale * (softmax - q) on kept rows, q = (1 - s) onehot(target) + s / V; 0 on
// ignored rows. scale is d(loss) / tokens. f32 runs a copy compiled for this process's level
// (core/cpu_isa.h), or for `isa` (at most that level); every level gives the same bits.
template <typename T>
void cross_entropy_backward(int64_t n, int64_t v, const T* logits, const int32_t* targets,
                            int64_t ignore_index, double smoothing, const T* row_max,
                            const T* row_logsum, double scale, T* dlogits, CpuIsa isa = cpu_isa());

}  // namespace tfm::cpu
