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
    if (e != cudaSuccess || r.count == 0) {
      r.count = 0;
      int driver = 0, runtime = 0;
      (void)cudaDriverGetVersion(&driver);  // 0 when no driver is installed
      (void)cudaRuntimeGetVersion(&runtime);
      r.reason = explain_no_device(e, driver, runtime);
      (void)cudaGetLastError();
    }
    return r;
  }();
  return p;
}

std::string cuda_version(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

}  // namespace

// What users can act on; the runtime's own words (e.g. "CUDA driver version is insufficient for
// CUDA runtime version" when there is no driver at all) stay in the error name at the end.
std::string explain_no_device(int error, int driver_version, int runtime_version) {
  const auto e = static_cast<cudaError_t>(error);
  const std::string name = e == cudaSuccess ? "0 devices" : cudaGetErrorName(e);
  const std::string driver = "the NVIDIA driver (CUDA " + cuda_version(driver_version) + ")";
  std::string why;
  if (e == cudaErrorNoDevice || e == cudaSuccess) {
    why = driver_version == 0 ? "no NVIDIA GPU was found"
                              : driver +
                                    " finds no GPU on this machine (in a container, pass "
                                    "the GPU in: docker run --gpus all)";
  } else if (e == cudaErrorStubLibrary) {
    why =
        "the CUDA driver library found is the toolkit's stub, not the driver's: take the "
        "toolkit's stubs/ directory off LD_LIBRARY_PATH";
  } else if (driver_version == 0) {
    why =
        "no NVIDIA driver is installed (libcuda.so.1 was not found): install the driver for "
        "your GPU";
  } else if (e == cudaErrorInsufficientDriver || driver_version < runtime_version) {
    why = driver + " is older than the CUDA " + cuda_version(runtime_version) +
          " toolkit this tfm was built with: update the driver, or build tfm with a toolkit no "
          "newer than CUDA " +
          cuda_version(driver_version);
  } else if (e == cudaErrorSystemDriverMismatch) {
    why =
        "the NVIDIA driver's library and its kernel module are of different versions (a "
        "driver updated without a reboot?): reboot, or reinstall the driver";
  } else if (e == cudaErrorDevicesUnavailable) {
    why = "every GPU is busy or unavailable (in exclusive-process mode, held by another program?)";
  } else if (e == cudaErrorInitializationError || e == cudaErrorOperatingSystem ||
             e == cudaErrorNotPermitted) {
    why = driver + " could not start (is its kernel module loaded? nvidia-smi says more)";
  } else {
    why = cudaGetErrorString(e);
  }
  return why + " (" + name + "; docs/gpu.md)";
}

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
