#include "tfm/ops/softmax.h"

#include "tfm/autograd/tape.h"
#include "tfm/ops/cpu/softmax_cpu.h"
#include "tfm/ops/dispatch.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/softmax.h"
#endif

namespace tfm {

namespace {

// Rows and width of x (..., C) viewed as (N, C).
void check_rows(const Tensor& x, const char* op, int64_t& n, int64_t& c) {
  TFM_CHECK(x.dim() >= 1) << op << ": x must have at least one axis, got " << x.describe();
  c = x.size(-1);
  TFM_CHECK(c >= 1) << op << ": the last axis is empty in x " << x.describe();
  n = x.numel() / c;
}

// Both backwards need only the forward's output y and the incoming gradient. A kernel is called
// as kernel(n, c, dy, y, dx) with T* arguments: cpu_kernel with T = float or double, cuda_kernel
// with float.
template <typename CpuKernel, typename CudaKernel>
Tensor backward_from_output(const Tensor& gy_in, const Tensor& y, const char* op,
                            CpuKernel cpu_kernel, CudaKernel cuda_kernel) {
  const int64_t c = y.size(-1);
  const int64_t n = y.numel() / c;
  Tensor gy = gy_in.contiguous();
  Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
  if (on_cuda(y)) {
    cuda_kernel(n, c, gy.data<float>(), y.data<float>(), dx.data<float>());
    return dx;
  }
  dispatch_floating(y.dtype(), op, [&](auto z) {
    using T = decltype(z);
    cpu_kernel(n, c, gy.data<T>(), y.data<T>(), dx.data<T>());
  });
  return dx;
}

// A CUDA kernel for backward_from_output where the backend is built; elsewhere no tensor is on
// cuda (check_float_input refuses them), so it is never called.
#ifdef TFM_WITH_CUDA
#define TFM_CUDA_ROWS_KERNEL(name) [](auto... a) { cuda::name(a...); }
#else
#define TFM_CUDA_ROWS_KERNEL(name) [](auto...) {}
#endif

}  // namespace

Tensor softmax(const Tensor& x_in) {
  Tensor x = check_float_input(x_in, "softmax", "x");
  int64_t n = 0, c = 0;
  check_rows(x, "softmax", n, c);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(x)) cuda::softmax_forward(n, c, x.data<float>(), y.data<float>());
#endif
  if (!on_cuda(x)) {
    dispatch_floating(x.dtype(), "softmax", [&](auto z) {
      using T = decltype(z);
      cpu::softmax_forward<T>(n, c, x.data<T>(), y.data<T>());
    });
  }
  if (autograd::needs_grad({&x_in})) {
    autograd::record(
        "softmax", {&x_in}, {&y},
        [y = y.detach()](const autograd::Grads& g, const autograd::Needs&) {
          return autograd::Grads{backward_from_output(
              g[0], y, "softmax backward", [](auto... a) { cpu::softmax_backward(a...); },
              TFM_CUDA_ROWS_KERNEL(softmax_backward))};
        });
  }
  return y;
}

Tensor log_softmax(const Tensor& x_in) {
  Tensor x = check_float_input(x_in, "log_softmax", "x");
  int64_t n = 0, c = 0;
  check_rows(x, "log_softmax", n, c);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(x)) cuda::log_softmax_forward(n, c, x.data<float>(), y.data<float>());
#endif
  if (!on_cuda(x)) {
    dispatch_floating(x.dtype(), "log_softmax", [&](auto z) {
      using T = decltype(z);
      cpu::log_softmax_forward<T>(n, c, x.data<T>(), y.data<T>());
    });
  }
  if (autograd::needs_grad({&x_in})) {
    autograd::record(
        "log_softmax", {&x_in}, {&y},
        [y = y.detach()](const autograd::Grads& g, const autograd::Needs&) {
          return autograd::Grads{backward_from_output(
              g[0], y, "log_softmax backward", [](auto... a) { cpu::log_softmax_backward(a...); },
              TFM_CUDA_ROWS_KERNEL(log_softmax_backward))};
        });
  }
  return y;
}

}  // namespace tfm
