// Device copies core/ needs beyond one cudaMemcpy (no CUDA types): a strided view packed into
// contiguous memory (Tensor::contiguous of a device view), and blocks at a pitch (the shape ops'
// narrow and concat). Device pointers; queued on the default stream.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tfm::cuda {

// Axes a strided view may have on the device.
inline constexpr int kMaxStridedDims = 8;

// dst (contiguous, `shape` of ndim axes) = the view whose first element is src, with element
// strides `strides`; elements of es bytes (1, 2, 4 or 8).
void gather_strided(int ndim, const int64_t* shape, const int64_t* strides, size_t es,
                    const void* src, void* dst);

// rows blocks of `bytes` each: dst + i·dst_pitch ← src + i·src_pitch (bytes).
void copy_2d(int64_t rows, size_t bytes, const void* src, size_t src_pitch, void* dst,
             size_t dst_pitch);

}  // namespace tfm::cuda
