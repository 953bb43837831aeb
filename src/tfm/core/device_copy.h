// Moving tensors between the host and a device.
#pragma once

#include "tfm/core/tensor.h"

namespace tfm {

// A copy of t on `device` (contiguous, same shape and dtype, no autograd); t itself when it is
// already there. Copying to or from cuda throws "no CUDA device: ..." on a machine without one,
// and a clear error in a build without the CUDA backend.
Tensor to_device(const Tensor& t, Device device);

}  // namespace tfm
