// Row gathers and copies by index, without autograd: the memory moves of a decoder's state
// (beam reorder, KV-cache append) and of scoring, written once here so that no code above ops/
// moves tensor memory itself.
#pragma once

#include <cstdint>
#include <vector>

#include "tfm/core/tensor.h"

namespace tfm {

// x's rows along axis 0 in the order `rows` gives (repeats allowed): (rows.size(), ...),
// contiguous. Any dtype.
Tensor index_rows(const Tensor& x, const std::vector<int64_t>& rows);

// dst[i] = src[index[i]] (src[i] with no index) for i < dst.size(0): src and dst are (R, L, C)
// views of one dtype whose last two axes are dense, their axis-0 strides free (a KV cache's
// preallocated rows). The KV cache's append and reorder.
void copy_rows(const Tensor& src, const std::vector<int64_t>* index, const Tensor& dst);

// x[r, cols[r]] for each row r of x (R, V) f32, cols i32 (R) in [0, V): (R) f32.
Tensor pick_columns(const Tensor& x, const Tensor& cols);

// 1 where ids == value, else 0: u8 of ids' shape (i32). The padding mask of a batch of ids.
Tensor equal_mask(const Tensor& ids, int64_t value);

}  // namespace tfm
