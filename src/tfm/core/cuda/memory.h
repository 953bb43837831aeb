// Raw copies between host and device memory, on the default stream. No CUDA types.
#pragma once

#include <cstddef>

namespace tfm::cuda {

// Blocking copies: when they return the destination holds the data (and, for host_to_device,
// the host buffer may be reused). Device pointers come from device_allocator().
void copy_host_to_device(void* dst, const void* src, size_t bytes);
void copy_device_to_host(void* dst, const void* src, size_t bytes);
void copy_device_to_device(void* dst, const void* src, size_t bytes);
// Zeroes `bytes` of device memory (asynchronously, on the default stream).
void memset_zero(void* dst, size_t bytes);

}  // namespace tfm::cuda
