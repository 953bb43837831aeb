// Whole-arena passes of training, on the arena's device: the Adam/AdamW update and the squared
// gradient norm. One call each per update, over flat buffers (train/param_arena.h).
#pragma once

#include <cstdint>
#include <vector>

#include "tfm/core/tensor.h"
#include "tfm/ops/kernel_args.h"

namespace tfm {

// Elements [offset, offset + numel) of a flat buffer.
struct FlatRange {
  int64_t offset = 0;
  int64_t numel = 0;
};

// One update of parameters p from gradients g with moments m, v: flat contiguous f32 buffers of
// one size, updated in place on the elements of `ranges` (sorted, disjoint), the rest untouched.
// Per element (kernels::AdamUpdate), so neither the thread count nor the split changes a bit.
// p_bf16, when defined (bf16, p's size and device), receives every updated element of p rounded to
// bf16 (cpu::to_bf16) in the same pass: the weight copies bf16 mixed precision multiplies.
void adam_step(const kernels::AdamUpdate& update, const Tensor& p, const Tensor& g, const Tensor& m,
               const Tensor& v, const std::vector<FlatRange>& ranges,
               const Tensor& p_bf16 = Tensor());

// Σ x² over every element of the tensors (f32), in double: each tensor cut into fixed chunks of
// 2^15 elements, each chunk summed in order, the chunks' sums added in order. The same bits for
// any thread count.
double sum_of_squares(const std::vector<Tensor>& xs);

}  // namespace tfm
