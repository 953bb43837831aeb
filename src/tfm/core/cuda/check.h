// Error checking for CUDA and cuBLAS(Lt) calls: every status that is not success becomes a
// tfm::Error naming the call, the source location and the library's own description, e.g.
//   "cudaMalloc(&p, bytes) failed: out of memory (cudaErrorMemoryAllocation = 2) [... at x.cu:12]"
// The macros take any expression returning cudaError_t / cublasStatus_t and use no CUDA types
// themselves, so this header is safe to include from code compiled without the CUDA headers.
#pragma once

#include <string>

namespace tfm::cuda::detail {

// The message for a failed call; `name` and `description` come from the CUDA library.
std::string format_error(const char* library, const char* call, int status, const char* name,
                         const char* description);

// Throw tfm::Error for a failed CUDA runtime / cuBLAS(Lt) status (looked up by number).
[[noreturn]] void throw_cuda_error(int status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(int status, const char* call, const char* file, int line);

}  // namespace tfm::cuda::detail

#define TFM_CUDA_CHECK(expr)                                                              \
  do {                                                                                    \
    const int tfm_cuda_status_ = static_cast<int>(expr);                                  \
    if (tfm_cuda_status_ != 0)                                                            \
      ::tfm::cuda::detail::throw_cuda_error(tfm_cuda_status_, #expr, __FILE__, __LINE__); \
  } while (0)

#define TFM_CUBLAS_CHECK(expr)                                                                \
  do {                                                                                        \
    const int tfm_cublas_status_ = static_cast<int>(expr);                                    \
    if (tfm_cublas_status_ != 0)                                                              \
      ::tfm::cuda::detail::throw_cublas_error(tfm_cublas_status_, #expr, __FILE__, __LINE__); \
  } while (0)
