#include "tfm/ops/layer_norm.h"

#include <cmath>

#include "tfm/autograd/tape.h"
#include "tfm/ops/cpu/layer_norm_cpu.h"
#include "tfm/ops/dispatch.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/layer_norm.h"
#endif

namespace tfm {

namespace {

// Checks gamma/beta/eps against x (..., C); returns C.
int64_t check_params(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                     const char* op) {
  TFM_CHECK(x.dim() >= 1) << op << ": x must have at least one axis, got " << x.describe();
  const int64_t c = x.size(-1);
  TFM_CHECK(c >= 1) << op << ": the normalised (last) axis is empty in x " << x.describe();
  TFM_CHECK(gamma.shape() == Shape{c})
      << op << ": gamma " << gamma.describe() << " does not match the last axis of x "
      << x.describe() << ", expected (" << c << ")";
  TFM_CHECK(beta.shape() == Shape{c})
      << op << ": beta " << beta.describe() << " does not match the last axis of x " << x.describe()
      << ", expected (" << c << ")";
  check_same_dtype(x, gamma, op);
  check_same_dtype(x, beta, op);
  check_same_device(x, gamma, op);
  check_same_device(x, beta, op);
  TFM_CHECK(std::isfinite(eps) && eps >= 0) << op << ": eps must be finite and >= 0, got " << eps;
  return c;
}

// The gradients of x (or of sum, for add_layer_norm), gamma and beta. gsum, when defined, is a
// gradient that reaches x directly and is added into dx (add_layer_norm's `sum` output). gamma
// and beta are inputs gamma_input and gamma_input + 1 of the op (their gradients may go straight
// into a gradient arena).
autograd::Grads layer_norm_grads(const Tensor& gy_in, const Tensor& gsum_in, const Tensor& x,
                                 const Tensor& gamma, const Tensor& mean, const Tensor& rstd,
                                 bool need_dx, bool need_params, size_t gamma_input) {
  const int64_t c = x.size(-1);
  const int64_t n = x.numel() / c;
  Tensor gy = gy_in.contiguous();
  Tensor gsum = gsum_in.defined() ? gsum_in.contiguous() : Tensor();
  Tensor dx = need_dx ? Tensor::empty(x.shape(), x.dtype(), x.device()) : Tensor();
  Tensor dgamma =
      need_params ? autograd::grad_output(gamma_input, {c}, x.dtype(), x.device()) : Tensor();
  Tensor dbeta =
      need_params ? autograd::grad_output(gamma_input + 1, {c}, x.dtype(), x.device()) : Tensor();
#ifdef TFM_WITH_CUDA
  if (on_cuda(x)) {
    cuda::layer_norm_backward(
        n, c, gy.data<float>(), x.data<float>(), mean.data<double>(), rstd.data<double>(),
        gamma.data<float>(), gsum.defined() ? gsum.data<float>() : nullptr,
        need_dx ? dx.data<float>() : nullptr, need_params ? dgamma.data<float>() : nullptr,
        need_params ? dbeta.data<float>() : nullptr);
    return {dx, dgamma, dbeta};
  }
#endif
  Tensor workspace =
      need_params ? Tensor::empty({cpu::layer_norm_backward_workspace(n, c)}, x.dtype()) : Tensor();
  dispatch_floating(x.dtype(), "layer_norm backward", [&](auto z) {
    using T = decltype(z);
    cpu::layer_norm_backward<T>(
        n, c, gy.data<T>(), x.data<T>(), mean.data<double>(), rstd.data<double>(), gamma.data<T>(),
        gsum.defined() ? gsum.data<T>() : nullptr, need_dx ? dx.data<T>() : nullptr,
        need_params ? dgamma.data<T>() : nullptr, need_params ? dbeta.data<T>() : nullptr,
        need_params ? workspace.data<T>() : nullptr);
  });
  return {dx, dgamma, dbeta};
}

}  // namespace

Tensor layer_norm(const Tensor& x_in, const Tensor& gamma_in, const Tensor& beta_in, double eps) {
  const char* op = "layer_norm";
  Tensor x = check_float_input(x_in, op, "x");
  Tensor gamma = check_float_input(gamma_in, op, "gamma");
  Tensor beta = check_float_input(beta_in, op, "beta");
  const int64_t c = check_params(x, gamma, beta, eps, op);
  const int64_t n = x.numel() / c;
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({n}, DType::f64, x.device());  // (N)
  Tensor rstd = Tensor::empty({n}, DType::f64, x.device());  // (N)
#ifdef TFM_WITH_CUDA
  if (on_cuda(x))
    cuda::layer_norm_forward(n, c, x.data<float>(), gamma.data<float>(), beta.data<float>(), eps,
                             y.data<float>(), mean.data<double>(), rstd.data<double>());
#endif
  if (!on_cuda(x)) {
    dispatch_floating(x.dtype(), op, [&](auto z) {
      using T = decltype(z);
      cpu::layer_norm_forward<T>(n, c, x.data<T>(), gamma.data<T>(), beta.data<T>(), eps,
                                 y.data<T>(), mean.data<double>(), rstd.data<double>());
    });
  }
  if (autograd::needs_grad({&x_in, &gamma_in, &beta_in})) {
    autograd::record(op, {&x_in, &gamma_in, &beta_in}, {&y},
                     [x, gamma, mean, rstd](const autograd::Grads& g, const autograd::Needs& need) {
                       return layer_norm_grads(g[0], Tensor(), x, gamma, mean, rstd, need[0],
                                               need[1] || need[2], 1);
                     });
  }
  return y;
}

AddLayerNormResult add_layer_norm(const Tensor& x_in, const Tensor& residual_in,
                                  const Tensor& gamma_in, const Tensor& beta_in, double eps) {
  const char* op = "add_layer_norm";
  Tensor x = check_float_input(x_in, op, "x");
  Tensor residual = check_float_input(residual_in, op, "residual");
  Tensor gamma = check_float_input(gamma_in, op, "gamma");
  Tensor beta = check_float_input(beta_in, op, "beta");
  TFM_CHECK(residual.shape() == x.shape())
      << op << ": residual " << residual.describe() << " does not match x " << x.describe();
  check_same_dtype(x, residual, op);
  check_same_device(x, residual, op);
  const int64_t c = check_params(x, gamma, beta, eps, op);
  const int64_t n = x.numel() / c;
  AddLayerNormResult out{Tensor::empty(x.shape(), x.dtype(), x.device()),
                         Tensor::empty(x.shape(), x.dtype(), x.device())};
  Tensor mean = Tensor::empty({n}, DType::f64, x.device());  // (N)
  Tensor rstd = Tensor::empty({n}, DType::f64, x.device());  // (N)
#ifdef TFM_WITH_CUDA
  if (on_cuda(x))
    cuda::add_layer_norm_forward(n, c, x.data<float>(), residual.data<float>(), gamma.data<float>(),
                                 beta.data<float>(), eps, out.sum.data<float>(),
                                 out.y.data<float>(), mean.data<double>(), rstd.data<double>());
#endif
  if (!on_cuda(x)) {
    dispatch_floating(x.dtype(), op, [&](auto z) {
      using T = decltype(z);
      cpu::add_layer_norm_forward<T>(n, c, x.data<T>(), residual.data<T>(), gamma.data<T>(),
                                     beta.data<T>(), eps, out.sum.data<T>(), out.y.data<T>(),
                                     mean.data<double>(), rstd.data<double>());
    });
  }
  if (autograd::needs_grad({&x_in, &residual_in, &gamma_in, &beta_in})) {
    // The backward needs only the values of `sum`, not its autograd state.
    autograd::record(
        op, {&x_in, &residual_in, &gamma_in, &beta_in}, {&out.y, &out.sum},
        [sum = out.sum.detach(), gamma, mean, rstd](const autograd::Grads& g,
                                                    const autograd::Needs& need) {
          autograd::Grads d = layer_norm_grads(g[0], g[1], sum, gamma, mean, rstd,
                                               need[0] || need[1], need[2] || need[3], 2);
          // d(sum)/dx = d(sum)/dresidual = identity; the tape copies before accumulating into
          // a gradient it shares, so handing out one tensor twice is safe.
          return autograd::Grads{need[0] ? d[0] : Tensor(), need[1] ? d[0] : Tensor(), d[1], d[2]};
        });
  }
  return out;
}

}  // namespace tfm
