// The CUDA device runtime seen from the rest of tfm: how many devices there are, what they are,
// and streams. No CUDA type appears here (a stream is an opaque handle), so any file may include
// it; only files under core/cuda and ops/cuda include the CUDA headers themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tfm::cuda {

// Number of usable devices; 0 when there is no driver or no device (never throws for that).
int device_count();
bool has_device();
// Why device_count() is 0, in plain words (no driver, no device, a driver older than the
// toolkit tfm was built with, ...) with the runtime's error name; "" when a device exists.
std::string no_device_reason();
// The plain-words reason for cudaGetDeviceCount's `error` (a cudaError_t's value; 0 with no
// device counted), given cudaDriverGetVersion's (0: no driver) and cudaRuntimeGetVersion's
// versions (e.g. 12040 for 12.4).
std::string explain_no_device(int error, int driver_version, int runtime_version);
// Throws tfm::Error "no CUDA device: <what> needs one (<reason>)" when there is none.
void require_device(const char* what);

struct DeviceInfo {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
  size_t total_memory = 0;  // bytes
  size_t shared_memory_per_block = 0;
  int max_threads_per_block = 0;
};
DeviceInfo device_info(int index = 0);
std::string describe(const DeviceInfo& d);  // e.g. "NVIDIA H100 (sm_90, 132 SMs, 79.1 GiB)"

// Waits for all work on the current device.
void synchronize();

// A CUDA stream. The default-constructed Stream is the legacy default stream (what every kernel
// here runs on unless given another); Stream::create() makes a non-blocking one that the object
// owns and destroys.
class Stream {
 public:
  Stream() = default;
  static Stream create();
  Stream(Stream&& o) noexcept : handle_(o.handle_), owned_(o.owned_) { o.owned_ = false; }
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  void synchronize() const;
  // The cudaStream_t, for code under core/cuda and ops/cuda.
  void* native() const { return handle_; }

 private:
  void* handle_ = nullptr;
  bool owned_ = false;
};

// The stream kernels use when none is given: the legacy default stream.
const Stream& default_stream();

}  // namespace tfm::cuda
