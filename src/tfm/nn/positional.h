// Token embedding with positions: scale (√d or not), position table, the seeds' three kinds.
#pragma once

#include "tfm/core/tensor.h"

namespace tfm::nn {

// Row p of each table is position p + offset (fairseq's tables start at pad + 1).
// Interleaved sin/cos (seeds 001/003/004): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos.
Tensor sinusoidal_table(int64_t length, int64_t d, int64_t offset = 0);
// Seed 000, fairseq, M2M100: [sin(p·inv) | cos(p·inv)], inv_j = exp(-j·ln(10000)/max(d/2 - 1, 1)),
// j < d/2; a zero column pads odd d.
Tensor sinusoidal_concat_table(int64_t length, int64_t d, int64_t offset = 0);
// Marian: [sin(p / 10000^(2j/d)), j < ⌈d/2⌉ | cos(p / 10000^(2j/d)), j < ⌊d/2⌋].
Tensor sinusoidal_marian_table(int64_t length, int64_t d, int64_t offset = 0);

}  // namespace tfm::nn
