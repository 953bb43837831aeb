#include "tfm/ops/dispatch.h"

namespace tfm {

Tensor check_float_input(const Tensor& t, const char* op, const char* name) {
  TFM_CHECK(t.defined()) << op << ": " << name << " is undefined";
#ifdef TFM_WITH_CUDA
  TFM_CHECK(t.device() == Device::cpu || t.dtype() == DType::f32)
      << op << ": " << name << " is " << t.describe() << " on " << device_name(t.device())
      << "; the CUDA kernels take f32";
#else
  TFM_CHECK(t.device() == Device::cpu)
      << op << ": " << name << " is on " << device_name(t.device()) << "; only cpu is built";
#endif
  TFM_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::f64)
      << op << ": " << name << " must be f32 or f64, got " << t.describe();
  return t.contiguous();
}

void check_on_cpu(const Tensor& t, const char* op, const char* name) {
  TFM_CHECK(t.defined()) << op << ": " << name << " is undefined";
  TFM_CHECK(t.device() == Device::cpu) << op << ": " << name << " is on " << device_name(t.device())
                                       << "; " << op << " has a cpu kernel only";
}

void check_same_shape(const Tensor& a, const Tensor& b, const char* op) {
  TFM_CHECK(a.shape() == b.shape())
      << op << ": shapes differ, " << a.describe() << " vs " << b.describe();
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  TFM_CHECK(a.device() == b.device())
      << op << ": tensors on different devices, " << a.describe() << " on "
      << device_name(a.device()) << " and " << b.describe() << " on " << device_name(b.device());
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  TFM_CHECK(a.dtype() == b.dtype())
      << op << ": dtypes differ, " << a.describe() << " vs " << b.describe();
}

}  // namespace tfm
