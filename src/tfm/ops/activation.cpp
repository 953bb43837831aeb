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

namespace {

// An activation whose backward reads its input x (gelu, silu, gelu_tanh).
Tensor input_activation(const Tensor& x_in, Activation act) {
  const char* name = activation_name(act);
  Tensor x = check_float_input(x_in, name, "x");
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(x)) cuda::input_activation_forward(act, x.numel(), x.data<float>(), y.data<float>());
#endif
  if (!on_cuda(x)) {
    dispatch_floating(x.dtype(), name, [&](auto z) {
      using T = decltype(z);
      cpu::input_activation_forward<T>(act, x.numel(), x.data<T>(), y.data<T>());
    });
  }
  if (autograd::needs_grad({&x_in})) {
    autograd::record(name, {&x_in}, {&y},
                     [x = x.detach(), act](const autograd::Grads& g, const autograd::Needs&) {
                       Tensor gy = g[0].contiguous();
                       Tensor gx = Tensor::empty(x.shape(), x.dtype(), x.device());
#ifdef TFM_WITH_CUDA
                       if (on_cuda(x))
                         cuda::input_activation_backward(act, x.numel(), gy.data<float>(),
                                                         x.data<float>(), gx.data<float>());
#endif
                       if (!on_cuda(x)) {
                         dispatch_floating(x.dtype(), "activation backward", [&](auto z) {
                           using T = decltype(z);
                           cpu::input_activation_backward<T>(act, x.numel(), gy.data<T>(),
                                                             x.data<T>(), gx.data<T>());
                         });
                       }
                       return autograd::Grads{gx};
                     });
  }
  return y;
}

}  // namespace

Tensor gelu(const Tensor& x) {
  return input_activation(x, Activation::gelu);
}

Tensor silu(const Tensor& x) {
  return input_activation(x, Activation::silu);
}

Tensor gelu_tanh(const Tensor& x) {
  return input_activation(x, Activation::gelu_tanh);
}

}  // namespace tfm
