#include "tfm/ops/elementwise.h"

#include "tfm/autograd/tape.h"
#include "tfm/ops/cpu/elementwise_cpu.h"
#include "tfm/ops/dispatch.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/elementwise.h"
#endif

namespace tfm {

namespace {

// out = alpha * a + beta * b
Tensor linear_combination(const Tensor& a_in, double alpha, const Tensor& b_in, double beta,
                          const char* op) {
  Tensor a = check_float_input(a_in, op, "a");
  Tensor b = check_float_input(b_in, op, "b");
  check_same_shape(a, b, op);
  check_same_dtype(a, b, op);
  check_same_device(a, b, op);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(a)) {
    cuda::axpby(a.numel(), static_cast<float>(alpha), a.data<float>(), static_cast<float>(beta),
                b.data<float>(), out.data<float>());
    return out;
  }
#endif
  dispatch_floating(a.dtype(), op, [&](auto z) {
    using T = decltype(z);
    cpu::axpby<T>(a.numel(), T(alpha), a.data<T>(), T(beta), b.data<T>(), out.data<T>());
  });
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = linear_combination(a, 1.0, b, 1.0, "add");
  if (autograd::needs_grad({&a, &b})) {
    autograd::record("add", {&a, &b}, {&out}, [](const autograd::Grads& g, const autograd::Needs&) {
      return autograd::Grads{g[0], g[0]};
    });
  }
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = linear_combination(a, 1.0, b, -1.0, "sub");
  if (autograd::needs_grad({&a, &b})) {
    autograd::record("sub", {&a, &b}, {&out},
                     [](const autograd::Grads& g, const autograd::Needs& n) {
                       return autograd::Grads{g[0], n[1] ? scale(g[0], -1.0) : Tensor()};
                     });
  }
  return out;
}

Tensor mul(const Tensor& a_in, const Tensor& b_in) {
  Tensor a = check_float_input(a_in, "mul", "a");
  Tensor b = check_float_input(b_in, "mul", "b");
  check_same_shape(a, b, "mul");
  check_same_dtype(a, b, "mul");
  check_same_device(a, b, "mul");
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(a)) cuda::mul(a.numel(), a.data<float>(), b.data<float>(), out.data<float>());
#endif
  if (!on_cuda(a)) {
    dispatch_floating(a.dtype(), "mul", [&](auto z) {
      using T = decltype(z);
      cpu::mul<T>(a.numel(), a.data<T>(), b.data<T>(), out.data<T>());
    });
  }
  if (autograd::needs_grad({&a_in, &b_in})) {
    autograd::record(
        "mul", {&a_in, &b_in}, {&out}, [a, b](const autograd::Grads& g, const autograd::Needs& n) {
          return autograd::Grads{n[0] ? mul(g[0], b) : Tensor(), n[1] ? mul(g[0], a) : Tensor()};
        });
  }
  return out;
}

Tensor scale(const Tensor& a_in, double s) {
  Tensor a = check_float_input(a_in, "scale", "a");
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(a)) cuda::scale(a.numel(), static_cast<float>(s), a.data<float>(), out.data<float>());
#endif
  if (!on_cuda(a)) {
    dispatch_floating(a.dtype(), "scale", [&](auto z) {
      using T = decltype(z);
      cpu::scale<T>(a.numel(), T(s), a.data<T>(), out.data<T>());
    });
  }
  if (autograd::needs_grad({&a_in})) {
    autograd::record("scale", {&a_in}, {&out},
                     [s](const autograd::Grads& g, const autograd::Needs&) {
                       return autograd::Grads{scale(g[0], s)};
                     });
  }
  return out;
}

void add_(Tensor& a, const Tensor& b_in, double alpha) {
  TFM_CHECK(a.is_contiguous()) << "add_: destination must be contiguous, got " << a.describe();
  Tensor b = check_float_input(b_in, "add_", "b");
  check_same_shape(a, b, "add_");
  check_same_dtype(a, b, "add_");
  check_same_device(a, b, "add_");
#ifdef TFM_WITH_CUDA
  if (on_cuda(a)) {
    cuda::axpby(a.numel(), 1.0f, a.data<float>(), static_cast<float>(alpha), b.data<float>(),
                a.data<float>());
    return;
  }
#endif
  dispatch_floating(a.dtype(), "add_", [&](auto z) {
    using T = decltype(z);
    cpu::axpby<T>(a.numel(), T(1), a.data<T>(), T(alpha), b.data<T>(), a.data<T>());
  });
}

void div_(Tensor& a, double d) {
  TFM_CHECK(a.is_contiguous()) << "div_: destination must be contiguous, got " << a.describe();
  check_float_input(a, "div_", "a");
#ifdef TFM_WITH_CUDA
  if (on_cuda(a)) {
    cuda::divide(a.numel(), static_cast<float>(d), a.data<float>(), a.data<float>());
    return;
  }
#endif
  dispatch_floating(a.dtype(), "div_", [&](auto z) {
    using T = decltype(z);
    T* x = a.data<T>();
    const T td = static_cast<T>(d);
    for (int64_t i = 0; i < a.numel(); ++i) x[i] /= td;
  });
}

}  // namespace tfm
