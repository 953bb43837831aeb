#include "tfm/core/cuda/runtime.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <mutex>

#include "tfm/core/check.h"
#include "tfm/core/cuda/check.h"
#include "tfm/core/cuda/device_fault.h"

namespace tfm::cuda {

namespace {

struct Probe {
  int count = 0;
  std::string reason;
};

// Asked once: the answer cannot change while the process runs.
const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    const cudaError_t e = cudaGetDeviceCount(&r.count);
    if (e != cudaSuccess) {
      r.count = 0;
      r.reason = std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")";
      (void)cudaGetLastError();
    } else if (r.count == 0) {
      r.reason = "cudaGetDeviceCount reports 0 devices";
    }
    return r;
  }();
  return p;
}

}  // namespace

int device_count() {
  return probe().count;
}

bool has_device() {
  return device_count() > 0;
}

std::string no_device_reason() {
  return probe().reason;
}

void require_device(const char* what) {
  TFM_CHECK(has_device()) << "no CUDA device: " << what << " needs one (" << no_device_reason()
                          << ")";
}

DeviceInfo device_info(int index) {
  require_device("device_info");
  TFM_CHECK(index >= 0 && index < device_count())
      << "device_info: no CUDA device " << index << " (there are " << device_count() << ")";
  cudaDeviceProp p{};
  TFM_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
  DeviceInfo d;
  d.index = index;
  d.name = p.name;
  d.major = p.major;
  d.minor = p.minor;
  d.multiprocessors = p.multiProcessorCount;
  d.total_memory = p.totalGlobalMem;
  d.shared_memory_per_block = p.sharedMemPerBlock;
  d.max_threads_per_block = p.maxThreadsPerBlock;
  return d;
}

std::string describe(const DeviceInfo& d) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %.1f GiB)", d.name.c_str(), d.major, d.minor,
                d.multiprocessors,
                static_cast<double>(d.total_memory) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

void synchronize() {
  require_device("synchronize");
  TFM_CUDA_CHECK(cudaDeviceSynchronize());
  raise_device_fault();
}

Stream Stream::create() {
  require_device("Stream::create");
  cudaStream_t s = nullptr;
  TFM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Stream r;
  r.handle_ = s;
  r.owned_ = true;
  return r;
}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (owned_) cudaStreamDestroy(static_cast<cudaStream_t>(handle_));
    handle_ = o.handle_;
    owned_ = o.owned_;
    o.owned_ = false;
  }
  return *this;
}

Stream::~Stream() {
  // A destructor must not throw; a failure here means the context is already gone.
  if (owned_) cudaStreamDestroy(static_cast<cudaStream_t>(handle_));
}

void Stream::synchronize() const {
  TFM_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(handle_)));
  raise_device_fault();
}

const Stream& default_stream() {
  static const Stream s;
  return s;
}

}  // namespace tfm::cuda
