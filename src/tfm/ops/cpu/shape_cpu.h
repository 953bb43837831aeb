// CPU data movement for the shape ops. Kernels move elements of `es` bytes (1, 2, 4 or 8), so
// they serve every dtype; they know nothing of autograd.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tfm::cpu {

// dst[o * dst_stride + j] = src[o * src_stride + j] for o < outer, j < len (strides and lengths
// in elements). The pattern of concat, split and narrow on a contiguous tensor viewed as
// (outer, axis * inner).
void copy_blocks(int64_t outer, int64_t len, size_t es, const void* src, int64_t src_stride,
                 void* dst, int64_t dst_stride);

// out (contiguous, `shape`) = the strided view whose first element is src, with strides
// `src_strides` (elements). Parallel over rows of the last axis.
void gather_strided(const std::vector<int64_t>& shape, const std::vector<int64_t>& src_strides,
                    size_t es, const void* src, void* out);

}  // namespace tfm::cpu
