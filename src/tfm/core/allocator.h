// Caching allocator: 64-byte aligned blocks, recycled by size class so a training step in steady
// state does no malloc. Size classes waste at most 1/8 of a block above 4 KiB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tfm/core/dtype.h"

namespace tfm {

struct AllocatorStats {
  size_t in_use_bytes = 0;  // handed out and not yet returned
  size_t peak_in_use_bytes = 0;
  size_t cached_bytes = 0;     // returned, kept for reuse
  uint64_t system_allocs = 0;  // calls that reached the system allocator
  // Misses that emptied the cache over its limit, or (decoding) gave cached blocks back.
  uint64_t trims = 0;
  uint64_t requests = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory owned by a shared_ptr whose deleter gives the block back to this allocator.
  virtual std::shared_ptr<void> allocate(size_t bytes) = 0;
  virtual Device device() const = 0;
};

// Blocks recycled by size class, whatever the device: the free lists, the statistics and the
// cache limit live here; a device supplies only its size classes and its system allocator.
class CachingAllocator : public Allocator {
 public:
  std::shared_ptr<void> allocate(size_t bytes) final;
  AllocatorStats stats() const;
  void reset_peak();
  // Gives every cached block back to the system.
  void empty_cache();
  // In training, the cache is emptied when a request misses it while more than this many bytes
  // sit cached:
  // with shapes that vary step to step (training on real sentences), every new size class would
  // otherwise keep its blocks forever (a Multi30k run reached 4 GiB resident for a 7.5M-parameter
  // model). 0 (the default) means max(256 MiB, peak bytes in use). Steady loops with fixed shapes
  // never miss, so they never trim. A limit set here also replaces the decoding rule below.
  void set_cache_limit(size_t bytes);
  // The bytes the cache may hold now: the limit, or when decoding (mark_resident) what the bound
  // leaves beside the bytes in use.
  size_t cache_limit() const;
  // For a process that decodes: the bytes in use now (a loaded model's weights) stay, and what is
  // allocated afterwards changes shape every step (rows finish, sources vary). From then on (no
  // limit set with set_cache_limit, which still wins) the tensors' memory, in use and cached,
  // stays within the most in use at once since the call plus a sixteenth of the working set (that
  // peak beyond the bytes in use at the call): a miss gives cached blocks back, the largest first,
  // until the new block fits; and a request may take a cached block up to twice its size (the
  // memory is held either way), since a search's rows shrink step by step. Small model, 1000
  // sentences, greedy at 2 threads, int8: peak RSS 138 → 95 MB and 785 → 340 system allocations;
  // beam 4: 2143 → 944 (whole-cache trims at the working set's size before).
  static constexpr size_t kDecodeSlackDivisor = 16;
  void mark_resident();

 protected:
  // The class (the block size actually allocated) of a request of `bytes`.
  virtual size_t class_of(size_t bytes) const = 0;
  // A new block of `bytes`, or nullptr when the device is out of memory (other failures throw).
  virtual void* system_alloc(size_t bytes) = 0;
  // p as system_alloc(bytes) returned it.
  virtual void system_free(void* p, size_t bytes) noexcept = 0;

 private:
  void release(void* p, size_t cls);
  size_t cache_limit_locked() const;
  // Whether the decoding rule holds (mark_resident, no explicit limit), and the bytes, in use and
  // cached, it lets the tensors hold now.
  bool decoding_locked() const { return resident_marked_ && cache_limit_ == 0; }
  size_t decode_bound_locked() const;
  // Decoding: the cached blocks (with their classes) to give back, the largest first, so that a
  // new block of `cls` fits the bound; taken out of the cache.
  std::vector<std::pair<void*, size_t>> give_back_locked(size_t cls);

  mutable std::mutex mu_;
  // Free blocks by class, ordered so that a miss can take the next larger cached class.
  std::map<size_t, std::vector<void*>> free_;
  AllocatorStats stats_;
  size_t cache_limit_ = 0;
  bool resident_marked_ = false;
  size_t resident_bytes_ = 0;  // in use at mark_resident
  size_t peak_since_mark_ = 0;
};

// Blocks of kMapBytes and more are mapped pages of their own (mmap), so a trimmed cache gives
// their memory back to the system. Through malloc they would not: glibc raises its mmap
// threshold to the largest block freed (up to 32 MiB), so a decoder's megabyte-sized tensors
// then come from the heap, whose free middle stays resident (small model, int8, greedy: peak RSS
// 95 → 85 MB, the same as with MALLOC_MMAP_THRESHOLD_ fixed at 128 KiB).
class CpuCachingAllocator final : public CachingAllocator {
 public:
  static constexpr size_t kAlignment = 64;
  static constexpr size_t kMapBytes = size_t{128} << 10;
  Device device() const override { return Device::cpu; }
  ~CpuCachingAllocator() override;
  static size_t size_class(size_t bytes);

 private:
  size_t class_of(size_t bytes) const override { return size_class(bytes); }
  void* system_alloc(size_t bytes) override;
  void system_free(void* p, size_t bytes) noexcept override;
};

// The process-wide allocator of a device: cuda is cuda::device_allocator() where the CUDA backend
// is built (throwing "no CUDA device" without a GPU); in a CPU-only build asking for it throws.
Allocator& allocator_for(Device device);
CpuCachingAllocator& cpu_allocator();

}  // namespace tfm
