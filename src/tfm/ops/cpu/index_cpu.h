// CPU data movement by row index (ops/index.h). Rows are moved whole with memcpy, so the
// kernels serve every dtype.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tfm::cpu {

// dst + i·dst_stride ← src + index[i]·src_stride (src + i·src_stride without index), `bytes` each,
// for i < rows. Strides in bytes.
void copy_rows(int64_t rows, size_t bytes, const void* src, int64_t src_stride,
               const int64_t* index, void* dst, int64_t dst_stride);

// out[r] = x[r·v + cols[r]] for r < rows.
void pick_columns(int64_t rows, int64_t v, const float* x, const int32_t* cols, float* out);

}  // namespace tfm::cpu
