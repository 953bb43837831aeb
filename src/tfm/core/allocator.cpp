#include "tfm/core/allocator.h"

#include <bit>
#include <cstdlib>
#include <new>

#include "tfm/core/check.h"
#ifdef TFM_WITH_CUDA
#include "tfm/core/cuda/device_allocator.h"
#endif

namespace tfm {

size_t CpuCachingAllocator::size_class(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes <= 4096) return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  // Eight classes per power of two.
  size_t top = std::bit_floor(bytes);
  size_t step = top / 8;
  return (bytes + step - 1) / step * step;
}

std::shared_ptr<void> CpuCachingAllocator::allocate(size_t bytes) {
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
    bool trim = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      trim = stats_.cached_bytes > cache_limit_locked();
      if (trim) stats_.trims++;
    }
    if (trim) empty_cache();
    p = std::aligned_alloc(kAlignment, cls);
    if (p == nullptr) {
      // One retry after giving the cache back: fragmentation across classes can starve us.
      empty_cache();
      p = std::aligned_alloc(kAlignment, cls);
    }
    TFM_CHECK(p != nullptr) << "out of memory allocating " << bytes << " bytes on cpu";
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

void CpuCachingAllocator::release(void* p, size_t cls) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.in_use_bytes -= cls;
  stats_.cached_bytes += cls;
  free_[cls].push_back(p);
}

size_t CpuCachingAllocator::cache_limit_locked() const {
  if (cache_limit_ > 0) return cache_limit_;
  constexpr size_t kFloor = size_t{256} << 20;
  return stats_.peak_in_use_bytes > kFloor ? stats_.peak_in_use_bytes : kFloor;
}

void CpuCachingAllocator::set_cache_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  cache_limit_ = bytes;
}

size_t CpuCachingAllocator::cache_limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_limit_locked();
}

AllocatorStats CpuCachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CpuCachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_in_use_bytes = stats_.in_use_bytes;
}

void CpuCachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [cls, blocks] : free_) {
    for (void* p : blocks) std::free(p);
    stats_.cached_bytes -= cls * blocks.size();
    blocks.clear();
  }
  free_.clear();
}

CpuCachingAllocator::~CpuCachingAllocator() {
  empty_cache();
}

CpuCachingAllocator& cpu_allocator() {
  // Leaked on purpose: tensors in static storage may be released after main returns.
  static auto* a = new CpuCachingAllocator();
  return *a;
}

Allocator& allocator_for(Device device) {
#ifdef TFM_WITH_CUDA
  if (device == Device::cuda) return cuda::device_allocator();
#endif
  TFM_CHECK(device == Device::cpu)
      << "device " << device_name(device) << " is not available: this build has no CUDA backend";
  return cpu_allocator();
}

}  // namespace tfm
