// Strided views on the device: one thread an element, its source offset from the logical index.
#include "tfm/core/check.h"
#include "tfm/core/cuda/check.h"
#include "tfm/core/cuda/strided_copy.h"

namespace tfm::cuda {

namespace {

struct View {
  int ndim;
  long long shape[kMaxStridedDims];
  long long strides[kMaxStridedDims];
};

template <typename E>
__global__ void gather_strided_kernel(View v, long long n, const E* src, E* dst) {
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step) {
    long long rem = i, off = 0;
    for (int d = v.ndim - 1; d >= 0; --d) {
      const long long c = rem % v.shape[d];
      rem /= v.shape[d];
      off += c * v.strides[d];
    }
    dst[i] = src[off];
  }
}

}  // namespace

void gather_strided(int ndim, const int64_t* shape, const int64_t* strides, size_t es,
                    const void* src, void* dst) {
  TFM_CHECK(ndim >= 0 && ndim <= kMaxStridedDims)
      << "cuda gather_strided: " << ndim << " axes; at most " << kMaxStridedDims;
  View v{};
  v.ndim = ndim;
  long long n = 1;
  for (int d = 0; d < ndim; ++d) {
    v.shape[d] = shape[d];
    v.strides[d] = strides[d];
    n *= shape[d];
  }
  if (n == 0) return;
  constexpr int kThreads = 256;
  const long long want = (n + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(want < 8192 ? want : 8192);
  switch (es) {
    case 1:
      gather_strided_kernel<<<blocks, kThreads>>>(v, n, static_cast<const uint8_t*>(src),
                                                  static_cast<uint8_t*>(dst));
      break;
    case 2:
      gather_strided_kernel<<<blocks, kThreads>>>(v, n, static_cast<const uint16_t*>(src),
                                                  static_cast<uint16_t*>(dst));
      break;
    case 4:
      gather_strided_kernel<<<blocks, kThreads>>>(v, n, static_cast<const uint32_t*>(src),
                                                  static_cast<uint32_t*>(dst));
      break;
    case 8:
      gather_strided_kernel<<<blocks, kThreads>>>(v, n, static_cast<const uint64_t*>(src),
                                                  static_cast<uint64_t*>(dst));
      break;
    default:
      TFM_FAIL() << "cuda gather_strided: elements of " << es << " bytes (1, 2, 4 or 8)";
  }
  TFM_CUDA_CHECK(cudaGetLastError());
}

void copy_2d(int64_t rows, size_t bytes, const void* src, size_t src_pitch, void* dst,
             size_t dst_pitch) {
  if (rows <= 0 || bytes == 0) return;
  TFM_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, bytes, static_cast<size_t>(rows),
                                   cudaMemcpyDeviceToDevice, nullptr));
}

}  // namespace tfm::cuda
