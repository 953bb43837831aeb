// Caching allocator for device memory. cudaMalloc/cudaFree synchronise the device and cost
// tens of microseconds, so freed blocks are kept by size class and handed out again; a training
// step in steady state then makes no cudaMalloc call. Plain cudaMalloc only (never managed
// memory). Blocks are not tied to a stream: everything in tfm runs on one stream, where a block
// freed on the host while a kernel still reads it is only reused by work queued after that
// kernel. Code that uses a block on a second stream must synchronise before freeing it.
#pragma once

#include <cstddef>
#include <memory>

#include "tfm/core/allocator.h"

namespace tfm::cuda {

class CudaCachingAllocator final : public CachingAllocator {
 public:
  // cudaMalloc returns 256-byte aligned memory; classes are multiples of 512 bytes.
  static constexpr size_t kGranule = 512;
  static constexpr size_t kSmallLimit = size_t{1} << 20;

  Device device() const override { return Device::cuda; }
  ~CudaCachingAllocator() override;

  // Up to 1 MiB: the next multiple of 512 bytes. Above: eight classes per power of two (waste
  // at most 1/8), rounded to 512 bytes.
  static size_t size_class(size_t bytes);

 private:
  size_t class_of(size_t bytes) const override { return size_class(bytes); }
  void* system_alloc(size_t bytes) override;  // cudaMalloc; nullptr on out of memory
  void system_free(void* p, size_t bytes) noexcept override;
};

// The process-wide device allocator (device 0). Throws "no CUDA device: ..." without one.
CudaCachingAllocator& device_allocator();

}  // namespace tfm::cuda
