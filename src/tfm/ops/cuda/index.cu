#include "tfm/core/check.h"
#include "tfm/ops/cuda/common.cuh"
#include "tfm/ops/cuda/index.h"
#include "tfm/ops/cuda/launch.h"

namespace tfm::cuda {

namespace {

// Words of type W; every row, stride and base is a multiple of sizeof(W).
template <typename W>
__global__ void copy_rows_kernel(int64_t rows, int64_t words, const char* src, int64_t src_stride,
                                 const int32_t* index, char* dst, int64_t dst_stride) {
  const int64_t n = rows * words, step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t r = i / words, w = i % words;
    const int64_t from = index ? index[r] : r;
    reinterpret_cast<W*>(dst + r * dst_stride)[w] =
        reinterpret_cast<const W*>(src + from * src_stride)[w];
  }
}

__global__ void pick_columns_kernel(int64_t rows, int64_t v, const float* x, const int32_t* cols,
                                    float* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += step)
    out[r] = x[r * v + cols[r]];
}

__global__ void equal_mask_kernel(int64_t n, const int32_t* ids, int32_t value, uint8_t* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    out[i] = ids[i] == value ? 1 : 0;
}

bool aligned4(uintptr_t x) {
  return x % 4 == 0;
}

}  // namespace

void copy_rows(int64_t rows, size_t row_bytes, const void* src, int64_t src_stride,
               const int32_t* index, void* dst, int64_t dst_stride, const Stream& stream) {
  if (rows <= 0 || row_bytes == 0) return;
  const auto* s = static_cast<const char*>(src);
  auto* d = static_cast<char*>(dst);
  const bool words = aligned4(row_bytes) && aligned4(static_cast<uintptr_t>(src_stride)) &&
                     aligned4(static_cast<uintptr_t>(dst_stride)) &&
                     aligned4(reinterpret_cast<uintptr_t>(src)) &&
                     aligned4(reinterpret_cast<uintptr_t>(dst));
  const auto per_row = static_cast<int64_t>(words ? row_bytes / 4 : row_bytes);
  const int blocks = blocks_for(rows * per_row);
  if (words)
    copy_rows_kernel<uint32_t><<<blocks, kThreads, 0, detail::native(stream)>>>(
        rows, per_row, s, src_stride, index, d, dst_stride);
  else
    copy_rows_kernel<uint8_t><<<blocks, kThreads, 0, detail::native(stream)>>>(
        rows, per_row, s, src_stride, index, d, dst_stride);
  TFM_CUDA_CHECK_LAUNCH();
}

void pick_columns(int64_t rows, int64_t v, const float* x, const int32_t* cols, float* out,
                  const Stream& stream) {
  if (rows <= 0) return;
  pick_columns_kernel<<<blocks_for(rows), kThreads, 0, detail::native(stream)>>>(rows, v, x, cols,
                                                                                 out);
  TFM_CUDA_CHECK_LAUNCH();
}

void equal_mask(int64_t n, const int32_t* ids, int32_t value, uint8_t* out, const Stream& stream) {
  if (n <= 0) return;
  equal_mask_kernel<<<blocks_for(n), kThreads, 0, detail::native(stream)>>>(n, ids, value, out);
  TFM_CUDA_CHECK_LAUNCH();
}

}  // namespace tfm::cuda
