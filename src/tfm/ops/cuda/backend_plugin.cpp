// The entry point of libtfm_cuda.so: fills libtfm's table of the backend's functions
// (ops/cuda_backend.h) with this library's. The plugin exports this symbol alone
// (cmake/plugin.map), so its own calls never reach libtfm's stubs of the same names.
#include <cstring>
#include <string>

#include "tfm/core/cuda/check.h"
#include "tfm/ops/cuda_backend.h"

#ifndef TFM_VERSION_STRING
#error "TFM_VERSION_STRING (CMake's project version) must be defined"
#endif

extern "C" __attribute__((visibility("default"))) const char* tfm_plugin_cuda_backend(
    tfm::cuda::Backend* table, const char* signature, const char* version) {
  using namespace tfm::cuda;
  static std::string why;
  if (std::strcmp(version, TFM_VERSION_STRING) != 0) {
    why = std::string("it was built for tfm ") + TFM_VERSION_STRING + ", this is tfm " + version;
    return why.c_str();
  }
  if (std::strcmp(signature, kBackendSignature) != 0)
    return "it was built from other sources than this libtfm (their lists of CUDA entry points "
           "differ): rebuild and install both from one tree";
#define TFM_CUDA_SET(ret, name, ...) table->name = &tfm::cuda::name;
  TFM_CUDA_FUNCTIONS(TFM_CUDA_SET)
#undef TFM_CUDA_SET
  table->device_count = &device_count;
  table->no_device_reason = &no_device_reason;
  table->stream_create = [] { return Stream::create(); };
  table->stream_release = [](Stream& s) { Stream dying(std::move(s)); };
  table->stream_synchronize = [](const Stream& s) { s.synchronize(); };
  table->allocator_size_class = &CudaCachingAllocator::size_class;
  table->format_error = &detail::format_error;
  table->throw_cuda_error = &detail::throw_cuda_error;
  table->throw_cublas_error = &detail::throw_cublas_error;
  return nullptr;
}
