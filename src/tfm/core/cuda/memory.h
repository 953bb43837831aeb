// Raw copies between host and device memory, on the default stream. No CUDA types.
#pragma once

#include <cstddef>

namespace tfm::cuda {

// host_to_device returns once the host buffer may be reused (the copy is queued on the stream,
// before the kernels launched after it); device_to_host returns with the data in `dst`, and then
// throws any bad index a kernel recorded (device_fault.h). Device pointers come from
// device_allocator().
void copy_host_to_device(void* dst, const void* src, size_t bytes);
void copy_device_to_host(void* dst, const void* src, size_t bytes);
void copy_device_to_device(void* dst, const void* src, size_t bytes);
// Zeroes `bytes` of device memory (asynchronously, on the default stream).
void memset_zero(void* dst, size_t bytes);

}  // namespace tfm::cuda
