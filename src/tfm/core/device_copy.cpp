#include "tfm/core/device_copy.h"

namespace tfm {

Tensor to_device(const Tensor& t, Device device) {
  TFM_CHECK(t.defined()) << "to_device: undefined tensor";
  if (t.device() == device) return t;
  // A strided source is packed on its own device first: cross-device copies are one memcpy.
  Tensor src = t.contiguous();
  Tensor out = Tensor::empty(t.shape(), t.dtype(), device);
  out.copy_(src);
  return out;
}

}  // namespace tfm
