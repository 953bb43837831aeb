// CPU kernels for embedding lookup: a row gather forward, a deterministic scatter-add backward.
#pragma once

#include <cstdint>

namespace tfm::cpu {

// Position of the first id outside [0, v) among ids[0..n), or -1 when all are valid.
int64_t find_bad_id(int64_t n, const int32_t* ids, int64_t v);

// out[i, :] = weight[ids[i], :].    ids (n), weight (V, C) → out (n, C)
template <typename T>
void embedding_forward(int64_t n, const int32_t* ids, int64_t c, const T* weight, T* out);

// grad_weight[r, :] = sum of grad_out[i, :] over positions i with ids[i] == r, in increasing i;
// rows never looked up and the padding row (padding_idx >= 0) are zero. Every row is summed by
// one thread in position order, so the result does not depend on the thread count.
//   ids (n), grad_out (n, C) → grad_weight (V, C), fully written
template <typename T>
void embedding_backward(int64_t n, const int32_t* ids, int64_t v, int64_t c, int64_t padding_idx,
                        const T* grad_out, T* grad_weight);

}  // namespace tfm::cpu
