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

std::shared_ptr<void> CudaCachingAllocator::allocate(size_t bytes) {
  const size_t cls = size_class(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.requests++;
    auto it = free_.find(cls);
    if (it != free_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      stats_.cached_bytes -= cls;
    }
  }
  if (p == nullptr) {
    cudaError_t e = cudaMalloc(&p, cls);
    if (e == cudaErrorMemoryAllocation) {
      // Blocks cached in other classes may be what is missing: give them back and retry once.
      (void)cudaGetLastError();
      empty_cache();
      e = cudaMalloc(&p, cls);
    }
    if (e == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      const AllocatorStats s = stats();
      TFM_FAIL() << "out of memory allocating " << bytes << " bytes on cuda (" << s.in_use_bytes
                 << " bytes in use by tensors)";
    }
    TFM_CUDA_CHECK(e);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.system_allocs++;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.in_use_bytes += cls;
    if (stats_.in_use_bytes > stats_.peak_in_use_bytes)
      stats_.peak_in_use_bytes = stats_.in_use_bytes;
  }
  return std::shared_ptr<void>(p, [this, cls](void* q) { release(q, cls); });
}

void CudaCachingAllocator::release(void* p, size_t cls) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.in_use_bytes -= cls;
  stats_.cached_bytes += cls;
  free_[cls].push_back(p);
}

AllocatorStats CudaCachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CudaCachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_in_use_bytes = stats_.in_use_bytes;
}

void CudaCachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [cls, blocks] : free_) {
    // cudaFree can only fail here if the context is already broken; the block is lost either way.
    for (void* p : blocks) (void)cudaFree(p);
    stats_.cached_bytes -= cls * blocks.size();
    blocks.clear();
  }
  free_.clear();
}

CudaCachingAllocator& device_allocator() {
  require_device("allocating device memory");
  // Leaked on purpose: tensors in static storage may be released after main returns, when the
  // CUDA context is being torn down.
  static auto* a = new CudaCachingAllocator();
  return *a;
}

}  // namespace tfm::cuda
