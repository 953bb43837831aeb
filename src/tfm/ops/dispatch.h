// Helpers every op front end uses: dtype dispatch to templated kernels and the standard checks.
#pragma once

#include <string>

#include "tfm/core/check.h"
#include "tfm/core/tensor.h"

namespace tfm {

// Calls f(T{}) with T = float or double according to dt; other dtypes are an error naming op.
template <typename F>
void dispatch_floating(DType dt, const char* op, F&& f) {
  switch (dt) {
    case DType::f32:
      f(float{});
      return;
    case DType::f64:
      f(double{});
      return;
    default:
      TFM_FAIL() << op << ": dtype " << dtype_name(dt) << " is not supported (f32, f64)";
  }
}

// Fails unless t is defined and floating on a device with a kernel for it (f32 or f64 on the
// cpu; f32 on cuda, where the CUDA backend is built); returns a contiguous version.
Tensor check_float_input(const Tensor& t, const char* op, const char* name);
// Whether t lives on the GPU: the op front ends branch on this to their CUDA kernels.
inline bool on_cuda(const Tensor& t) {
  return t.device() == Device::cuda;
}
// Fails unless t is defined and on the cpu: for the ops whose only kernel is the CPU's so far.
void check_on_cpu(const Tensor& t, const char* op, const char* name);
void check_same_shape(const Tensor& a, const Tensor& b, const char* op);
void check_same_dtype(const Tensor& a, const Tensor& b, const char* op);
void check_same_device(const Tensor& a, const Tensor& b, const char* op);

}  // namespace tfm
