#include "tfm/core/cuda/device_allocator.h"

#include <cuda_runtime.h>

#include <bit>

#include "tfm/core/check.h"
#include "tfm/core/cuda/check.h"
#include "tfm/core/cuda/runtime.h"

namespace tfm::cuda {

size_t CudaCachingAllocator::size_class(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes <= kSmallLimit) return (bytes + kGranule - 1) / kGranule * kGranule;
  const size_t top = std::bit_floor(bytes);
  const size_t step = top / 8;  // >= 128 KiB here, itself a multiple of the granule
  return (bytes + step - 1) / step * step;
}

void* CudaCachingAllocator::system_alloc(size_t bytes) {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // clear the sticky-free error so later calls do not report it
    return nullptr;
  }
  TFM_CUDA_CHECK(e);
  return p;
}

void CudaCachingAllocator::system_free(void* p, size_t) noexcept {
  // cudaFree can only fail here if the context is already broken; the block is lost either way.
  (void)cudaFree(p);
}

CudaCachingAllocator::~CudaCachingAllocator() {
  empty_cache();
}

CudaCachingAllocator& device_allocator() {
  require_device("allocating device memory");
  // Leaked on purpose: tensors in static storage may be released after main returns, when the
  // CUDA context is being torn down.
  static auto* a = new CudaCachingAllocator();
  return *a;
}

}  // namespace tfm::cuda
