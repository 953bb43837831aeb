// Row gathers and small index kernels on the device, as ops/cpu/index_cpu.h: index_rows,
// copy_rows, pick_columns and equal_mask's bodies. Device pointers; indices already checked.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tfm/core/cuda/runtime.h"

namespace tfm::cuda {

// dst + i·dst_stride ← src + index[i]·src_stride (index null: i), row_bytes each, for i < rows.
// Strides in bytes.
void copy_rows(int64_t rows, size_t row_bytes, const void* src, int64_t src_stride,
               const int32_t* index, void* dst, int64_t dst_stride,
               const Stream& stream = default_stream());

// out[r] = x[r·v + cols[r]].
void pick_columns(int64_t rows, int64_t v, const float* x, const int32_t* cols, float* out,
                  const Stream& stream = default_stream());

// out[i] = ids[i] == value.
void equal_mask(int64_t n, const int32_t* ids, int32_t value, uint8_t* out,
                const Stream& stream = default_stream());

}  // namespace tfm::cuda
