// CPU kernels of the vocabulary-wide search steps (ops/decode_steps.h).
#pragma once

#include <cstdint>

namespace tfm::cpu {

// The k best values of row[0, v), best first, equal values lower index first, into ids/vals (k
// each). One pass keeping the best k so far in order; a block of 16 values is looked at one by
// one only when one of them beats the current k-th best, which after the first blocks is rare, so
// the scan runs at vector speed (two ymm compares a block) instead of sorting or comparing index
// by index.
void top_k_row(const float* row, int64_t v, int64_t k, int32_t* ids, float* vals);
// top_k_row, and whether every value of the row is below +inf and not NaN (in the same pass).
bool top_k_row_finite(const float* row, int64_t v, int64_t k, int32_t* ids, float* vals);

}  // namespace tfm::cpu
