#include "tfm/ops/dropout.h"

#include "tfm/autograd/tape.h"
#include "tfm/ops/cpu/dropout_cpu.h"
#include "tfm/ops/dispatch.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/dropout.h"
#endif

namespace tfm {

namespace {

Tensor apply_mask(const Tensor& x, const RandomStream& stream, double p) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(x)) {
    cuda::dropout_apply(x.numel(), x.data<float>(), stream, p, out.data<float>());
    return out;
  }
#endif
  dispatch_floating(x.dtype(), "dropout", [&](auto z) {
    using T = decltype(z);
    cpu::dropout_apply<T>(x.numel(), x.data<T>(), stream, p, out.data<T>());
  });
  return out;
}

}  // namespace

Tensor dropout(const Tensor& x_in, double p, bool training, Generator* gen) {
  TFM_CHECK(p >= 0.0 && p < 1.0) << "dropout: p must be in [0, 1), got " << p << " for x "
                                 << x_in.describe();
  if (!training || p == 0.0) {
    // Same checks as the active path, so eval mode does not accept what training rejects.
    TFM_CHECK(x_in.defined()) << "dropout: x is undefined";
    TFM_CHECK(x_in.dtype() == DType::f32 || x_in.dtype() == DType::f64)
        << "dropout: x must be f32 or f64, got " << x_in.describe();
    return x_in;
  }
  Tensor x = check_float_input(x_in, "dropout", "x");
  const RandomStream stream = (gen != nullptr ? *gen : default_generator()).next_stream();
  Tensor out = apply_mask(x, stream, p);
  if (autograd::needs_grad({&x_in})) {
    autograd::record("dropout", {&x_in}, {&out},
                     [stream, p](const autograd::Grads& g, const autograd::Needs&) {
                       return autograd::Grads{apply_mask(g[0].contiguous(), stream, p)};
                     });
  }
  return out;
}

}  // namespace tfm
