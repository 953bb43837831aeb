#include "tfm/ops/reduce.h"

#include "tfm/autograd/tape.h"
#include "tfm/ops/cpu/reduce_cpu.h"
#include "tfm/ops/dispatch.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/reduce.h"
#endif

namespace tfm {

namespace {

// A tensor of `shape` whose every element is s * g, for the scalar gradient g.   g () → (shape)
Tensor broadcast_scalar(const Tensor& g_in, const Shape& shape, double s, const char* op) {
  Tensor g = g_in.contiguous();
  Tensor out = Tensor::empty(shape, g.dtype(), g.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(g)) {
    cuda::broadcast_rows(1, out.numel(), g.data<float>(), static_cast<float>(s), out.data<float>());
    return out;
  }
#endif
  dispatch_floating(g.dtype(), op, [&](auto z) {
    using T = decltype(z);
    cpu::broadcast_rows<T>(1, out.numel(), g.data<T>(), T(s), out.data<T>());
  });
  return out;
}

// Scalar (shape {}) s * sum(x).
Tensor scaled_total(const Tensor& x, double s, const char* op) {
  Tensor out = Tensor::empty({}, x.dtype(), x.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(x)) {
    cuda::sum_scaled(x.numel(), x.data<float>(), s, out.data<float>());
    return out;
  }
#endif
  dispatch_floating(x.dtype(), op, [&](auto z) {
    using T = decltype(z);
    out.data<T>()[0] = static_cast<T>(s * cpu::sum_all<T>(x.numel(), x.data<T>()));
  });
  return out;
}

}  // namespace

Tensor sum(const Tensor& x_in) {
  Tensor x = check_float_input(x_in, "sum", "x");
  Tensor out = scaled_total(x, 1.0, "sum");
  if (autograd::needs_grad({&x_in})) {
    autograd::record("sum", {&x_in}, {&out},
                     [shape = x.shape()](const autograd::Grads& g, const autograd::Needs&) {
                       return autograd::Grads{broadcast_scalar(g[0], shape, 1.0, "sum")};
                     });
  }
  return out;
}

Tensor mean(const Tensor& x_in) {
  Tensor x = check_float_input(x_in, "mean", "x");
  TFM_CHECK(x.numel() > 0) << "mean: x is empty, " << x.describe();
  const double inv_n = 1.0 / static_cast<double>(x.numel());
  Tensor out = scaled_total(x, inv_n, "mean");
  if (autograd::needs_grad({&x_in})) {
    autograd::record("mean", {&x_in}, {&out},
                     [shape = x.shape(), inv_n](const autograd::Grads& g, const autograd::Needs&) {
                       return autograd::Grads{broadcast_scalar(g[0], shape, inv_n, "mean")};
                     });
  }
  return out;
}

Tensor sum_last(const Tensor& x_in) {
  Tensor x = check_float_input(x_in, "sum_last", "x");
  TFM_CHECK(x.dim() >= 1) << "sum_last: x needs at least one axis, got " << x.describe();
  const int64_t cols = x.size(-1);
  const Shape out_shape(x.shape().begin(), x.shape().end() - 1);  // (...)
  const int64_t rows = shape_numel(out_shape);
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  if (on_cuda(x)) {
#ifdef TFM_WITH_CUDA
    cuda::sum_rows(rows, cols, x.data<float>(), out.data<float>());
#endif
  } else {
    dispatch_floating(x.dtype(), "sum_last", [&](auto z) {
      using T = decltype(z);
      cpu::sum_rows<T>(rows, cols, x.data<T>(), out.data<T>());
    });
  }
  if (autograd::needs_grad({&x_in})) {
    autograd::record(
        "sum_last", {&x_in}, {&out},
        [shape = x.shape(), rows, cols](const autograd::Grads& g, const autograd::Needs&) {
          Tensor gy = g[0].contiguous();                              // (...)
          Tensor gx = Tensor::empty(shape, gy.dtype(), gy.device());  // (..., C)
#ifdef TFM_WITH_CUDA
          if (on_cuda(gy)) {
            cuda::broadcast_rows(rows, cols, gy.data<float>(), 1.f, gx.data<float>());
            return autograd::Grads{gx};
          }
#endif
          dispatch_floating(gy.dtype(), "sum_last", [&](auto z) {
            using T = decltype(z);
            cpu::broadcast_rows<T>(rows, cols, gy.data<T>(), T(1), gx.data<T>());
          });
          return autograd::Grads{gx};
        });
  }
  return out;
}

}  // namespace tfm
