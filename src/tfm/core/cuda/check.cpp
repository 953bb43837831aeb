#include "tfm/core/cuda/check.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "tfm/core/check.h"

namespace tfm::cuda::detail {

std::string format_error(const char* library, const char* call, int status, const char* name,
                         const char* description) {
  std::string s;
  s.append(call).append(" failed: ").append(description ? description : "unknown error");
  s.append(" (").append(library).append(" ").append(name ? name : "?");
  s.append(" = ").append(std::to_string(status)).append(")");
  return s;
}

void throw_cuda_error(int status, const char* call, const char* file, int line) {
  const auto e = static_cast<cudaError_t>(status);
  // Clears the runtime's last-error slot so a later unrelated check does not report this one.
  (void)cudaGetLastError();
  throw Error(format_error("CUDA", call, status, cudaGetErrorName(e), cudaGetErrorString(e)),
              std::string(file) + ":" + std::to_string(line));
}

void throw_cublas_error(int status, const char* call, const char* file, int line) {
  const auto s = static_cast<cublasStatus_t>(status);
  throw Error(
      format_error("cuBLAS", call, status, cublasLtGetStatusName(s), cublasLtGetStatusString(s)),
      std::string(file) + ":" + std::to_string(line));
}

}  // namespace tfm::cuda::detail
