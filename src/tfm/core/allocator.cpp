#include "tfm/core/allocator.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>

#include <sys/mman.h>

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

std::shared_ptr<void> CachingAllocator::allocate(size_t bytes) {
  size_t cls = class_of(bytes);
  void* p = nullptr;
  bool trim = false;
  std::vector<std::pair<void*, size_t>> give_back;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.requests++;
    // The request's class, or failing that the smallest cached class at most a quarter larger:
    // batches of varying length ask for sizes a class or two apart from step to step, and a
    // block that is a little too big beats a trip to the system (page faults on fresh memory
    // were 10 % of a Multi30k training step before).
    // Emptied lists stay in the map (release refills them without a node allocation), so the
    // search steps over them: the few classes within a quarter (twice the size when decoding).
    const bool decoding = decoding_locked();
    const size_t widest = decoding ? 2 * cls : cls + cls / 4;
    for (auto it = free_.lower_bound(cls); it != free_.end() && it->first <= widest; ++it) {
      if (it->second.empty()) continue;
      cls = it->first;
      p = it->second.back();
      it->second.pop_back();
      stats_.cached_bytes -= cls;
      break;
    }
    if (p == nullptr) {
      if (decoding)
        give_back = give_back_locked(cls);
      else if (stats_.cached_bytes > cache_limit_locked())
        trim = true;
      if (trim || !give_back.empty()) stats_.trims++;
    }
  }
  if (p == nullptr) {
    for (const auto& [q, c] : give_back) system_free(q, c);
    if (trim) empty_cache();
    p = system_alloc(cls);
    if (p == nullptr) {
      // One retry after giving the cache back: blocks cached in other classes may be what is
      // missing.
      empty_cache();
      p = system_alloc(cls);
    }
    TFM_CHECK(p != nullptr) << "out of memory allocating " << bytes << " bytes on "
                            << device_name(device()) << " (" << stats().in_use_bytes
                            << " bytes in use by tensors)";
    std::lock_guard<std::mutex> lock(mu_);
    stats_.system_allocs++;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.in_use_bytes += cls;
    if (stats_.in_use_bytes > stats_.peak_in_use_bytes)
      stats_.peak_in_use_bytes = stats_.in_use_bytes;
    peak_since_mark_ = std::max(peak_since_mark_, stats_.in_use_bytes);
  }
  return std::shared_ptr<void>(p, [this, cls](void* q) { release(q, cls); });
}

void CachingAllocator::release(void* p, size_t cls) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.in_use_bytes -= cls;
  stats_.cached_bytes += cls;
  free_[cls].push_back(p);
}

size_t CachingAllocator::decode_bound_locked() const {
  const size_t working =
      peak_since_mark_ > resident_bytes_ ? peak_since_mark_ - resident_bytes_ : 0;
  return peak_since_mark_ + working / kDecodeSlackDivisor;
}

std::vector<std::pair<void*, size_t>> CachingAllocator::give_back_locked(size_t cls) {
  std::vector<std::pair<void*, size_t>> out;
  const size_t bound = std::max(decode_bound_locked(), stats_.in_use_bytes + cls);
  // Largest first: the fewest blocks for the bytes, and the small ones that most steps ask for
  // stay.
  for (auto it = free_.rbegin(); it != free_.rend(); ++it) {
    while (!it->second.empty() && stats_.in_use_bytes + stats_.cached_bytes + cls > bound) {
      out.emplace_back(it->second.back(), it->first);
      it->second.pop_back();
      stats_.cached_bytes -= it->first;
    }
  }
  return out;
}

size_t CachingAllocator::cache_limit_locked() const {
  if (cache_limit_ > 0) return cache_limit_;
  if (resident_marked_) {
    const size_t bound = decode_bound_locked();
    return bound > stats_.in_use_bytes ? bound - stats_.in_use_bytes : 0;
  }
  constexpr size_t kFloor = size_t{256} << 20;
  return stats_.peak_in_use_bytes > kFloor ? stats_.peak_in_use_bytes : kFloor;
}

void CachingAllocator::mark_resident() {
  std::lock_guard<std::mutex> lock(mu_);
  resident_marked_ = true;
  resident_bytes_ = stats_.in_use_bytes;
  peak_since_mark_ = stats_.in_use_bytes;
}

void CachingAllocator::set_cache_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  cache_limit_ = bytes;
}

size_t CachingAllocator::cache_limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_limit_locked();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_in_use_bytes = stats_.in_use_bytes;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [cls, blocks] : free_) {
    for (void* p : blocks) system_free(p, cls);
    stats_.cached_bytes -= cls * blocks.size();
  }
  free_.clear();
}

void* CpuCachingAllocator::system_alloc(size_t bytes) {
  if (bytes < kMapBytes) return std::aligned_alloc(kAlignment, bytes);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;  // page-aligned
}

void CpuCachingAllocator::system_free(void* p, size_t bytes) noexcept {
  if (bytes < kMapBytes)
    std::free(p);
  else
    munmap(p, bytes);
}

// Derived classes empty the cache themselves: the base destructor can no longer reach
// system_free.
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
