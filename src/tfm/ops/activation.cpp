#include "tfm/ops/activation.h"

#include "tfm/autograd/tape.h"
#include "tfm/ops/cpu/activation_cpu.h"
#include "tfm/ops/dispatch.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/elementwise.h"
#endif

namespace tfm {

Tensor relu(const Tensor& x_in) {
  Tensor x = check_float_input(x_in, "relu", "x");
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(x)) cuda::relu_forward(x.numel(), x.data<float>(), y.data<float>());
#endif
  if (!on_cuda(x)) {
    dispatch_floating(x.dtype(), "relu", [&](auto z) {
      using T = decltype(z);
      cpu::relu_forward<T>(x.numel(), x.data<T>(), y.data<T>());
    });
  }
  if (autograd::needs_grad({&x_in})) {
    // The output decides the mask, so x need not be kept alive.
    autograd::record(
        "relu", {&x_in}, {&y}, [y = y.detach()](const autograd::Grads& g, const autograd::Needs&) {
          Tensor gy = g[0].contiguous();
          Tensor gx = Tensor::empty(y.shape(), y.dtype(), y.device());
#ifdef TFM_WITH_CUDA
          if (on_cuda(y))
            cuda::relu_backward(y.numel(), gy.data<float>(), y.data<float>(), gx.data<float>());
#endif
          if (!on_cuda(y)) {
            dispatch_floating(y.dtype(), "relu backward", [&](auto z) {
              using T = decltype(z);
              cpu::relu_backward<T>(y.numel(), gy.data<T>(), y.data<T>(), gx.data<T>());
            });
          }
          return autograd::Grads{gx};
        });
  }
  return y;
}

Tensor gelu(const Tensor& x_in) {
  Tensor x = check_float_input(x_in, "gelu", "x");
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(x)) cuda::gelu_forward(x.numel(), x.data<float>(), y.data<float>());
#endif
  if (!on_cuda(x)) {
    dispatch_floating(x.dtype(), "gelu", [&](auto z) {
      using T = decltype(z);
      cpu::gelu_forward<T>(x.numel(), x.data<T>(), y.data<T>());
    });
  }
  if (autograd::needs_grad({&x_in})) {
    autograd::record(
        "gelu", {&x_in}, {&y}, [x = x.detach()](const autograd::Grads& g, const autograd::Needs&) {
          Tensor gy = g[0].contiguous();
          Tensor gx = Tensor::empty(x.shape(), x.dtype(), x.device());
#ifdef TFM_WITH_CUDA
          if (on_cuda(x))
            cuda::gelu_backward(x.numel(), gy.data<float>(), x.data<float>(), gx.data<float>());
#endif
          if (!on_cuda(x)) {
            dispatch_floating(x.dtype(), "gelu backward", [&](auto z) {
              using T = decltype(z);
              cpu::gelu_backward<T>(x.numel(), gy.data<T>(), x.data<T>(), gx.data<T>());
            });
          }
          return autograd::Grads{gx};
        });
  }
  return y;
}

}  // namespace tfm
