#include "tfm/core/cuda/memory.h"

#include <cuda_runtime.h>

#include "tfm/core/cuda/check.h"
#include "tfm/core/cuda/device_fault.h"
#include "tfm/core/cuda/runtime.h"

namespace tfm::cuda {

void copy_host_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  require_device("copy to device");
  // Async from pageable memory: it returns once the source is staged (the host buffer may be
  // reused), ordered after the stream's earlier work, without cudaMemcpy's wait for that work.
  // A decoding step uploads its tokens this way: the host runs on while the GPU computes.
  TFM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, nullptr));
}

void copy_device_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  require_device("copy from device");
  TFM_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  raise_device_fault();  // the kernels before the copy are done: report what they found
}

void copy_device_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  require_device("device copy");
  TFM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, nullptr));
}

void memset_zero(void* dst, size_t bytes) {
  if (bytes == 0) return;
  require_device("memset on device");
  TFM_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, nullptr));
}

}  // namespace tfm::cuda
