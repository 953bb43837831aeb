#include "tfm/ops/cross_entropy.h"

#include <cmath>
#include <sstream>

#include "tfm/autograd/tape.h"
#include "tfm/ops/cpu/cross_entropy_cpu.h"
#include "tfm/ops/dispatch.h"
#include "tfm/ops/host.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/cross_entropy.h"
#endif

namespace tfm {

namespace {

// "(1, 3)": the multi-index of flat row i in `shape`, for error messages.
std::string position_str(const Shape& shape, int64_t i) {
  Shape idx(shape.size());
  for (int64_t k = static_cast<int64_t>(shape.size()) - 1; k >= 0; --k) {
    idx[k] = i % shape[k];
    i /= shape[k];
  }
  return shape_str(idx);
}

}  // namespace

CrossEntropyResult softmax_cross_entropy(const Tensor& logits_in, const Tensor& targets_in,
                                         double label_smoothing, int64_t ignore_index) {
  const char* op = "softmax_cross_entropy";
  Tensor logits = check_float_input(logits_in, op, "logits");
  TFM_CHECK(logits.dim() >= 1) << op << ": logits must have a vocabulary axis, got "
                               << logits.describe();
  const int64_t v = logits.size(-1);
  TFM_CHECK(v >= 1) << op << ": the vocabulary (last) axis is empty in logits "
                    << logits.describe();
  TFM_CHECK(targets_in.defined()) << op << ": targets is undefined";
  check_same_device(logits, targets_in, op);
  TFM_CHECK(targets_in.dtype() == DType::i32)
      << op << ": targets must be i32, got " << targets_in.describe();
  const Shape lead(logits.shape().begin(), logits.shape().end() - 1);
  TFM_CHECK(targets_in.shape() == lead)
      << op << ": targets " << targets_in.describe() << " do not match the leading shape of logits "
      << logits.describe() << ", expected " << shape_str(lead);
  TFM_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0)
      << op << ": label_smoothing must be in [0, 1], got " << label_smoothing;

  // A private copy (N ints): the backward must see these targets even if the caller refills
  // its batch buffer before calling it.
  Tensor targets = targets_in.clone();
  const int64_t n = targets.numel();
  const HostView<int32_t> host_targets = to_host<int32_t>(targets);
  const int32_t* tp = host_targets.data();
  // Checked up front, on one thread (on the host), so the kernel can trust every target.
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = tp[i];
    TFM_CHECK(t == ignore_index || (t >= 0 && t < v))
        << op << ": target " << t << " at position " << position_str(lead, i)
        << " is out of range [0, " << v << ") and is not ignore_index (" << ignore_index
        << "); logits " << logits.describe();
  }

  Tensor row_max = Tensor::empty({n}, logits.dtype(), logits.device());  // (N)
  Tensor row_logsum =
      Tensor::empty({n}, logits.dtype(), logits.device());  // (N) lse = max + logsum
  cpu::CrossEntropyTotals tot;
#ifdef TFM_WITH_CUDA
  if (on_cuda(logits))
    tot = cuda::cross_entropy_forward(n, v, logits.data<float>(), targets.data<int32_t>(),
                                      ignore_index, label_smoothing, row_max.data<float>(),
                                      row_logsum.data<float>());
#endif
  if (!on_cuda(logits)) {
    dispatch_floating(logits.dtype(), op, [&](auto z) {
      using T = decltype(z);
      tot = cpu::cross_entropy_forward<T>(n, v, logits.data<T>(), tp, ignore_index, label_smoothing,
                                          row_max.data<T>(), row_logsum.data<T>());
    });
  }

  CrossEntropyResult res;
  res.tokens = tot.tokens;
  res.correct = tot.correct;
  res.nll_sum = tot.nll_sum;
  const double mean_loss = tot.tokens > 0 ? tot.loss_sum / static_cast<double>(tot.tokens) : 0.0;
  res.loss = Tensor::full({}, mean_loss, logits.dtype(), logits.device());

  if (autograd::needs_grad({&logits_in})) {
    const int64_t tokens = tot.tokens;
    autograd::record(
        op, {&logits_in}, {&res.loss},
        [logits, targets, row_max, row_logsum, tokens, label_smoothing, ignore_index, n, v](
            const autograd::Grads& g, const autograd::Needs&) {
          // All targets ignored: the loss is the constant 0, so the gradient is 0.
          // The upstream gradient is one value; a device's comes back through to_host.
          const double upstream = on_cuda(g[0]) ? to_host<float>(g[0])[0] : g[0].item();
          const double scale = tokens > 0 ? upstream / static_cast<double>(tokens) : 0.0;
          Tensor d = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
#ifdef TFM_WITH_CUDA
          if (on_cuda(logits)) {
            cuda::cross_entropy_backward(n, v, logits.data<float>(), targets.data<int32_t>(),
                                         ignore_index, label_smoothing, row_max.data<float>(),
                                         row_logsum.data<float>(), scale, d.data<float>());
            return autograd::Grads{d};
          }
#endif
          dispatch_floating(logits.dtype(), "softmax_cross_entropy backward", [&](auto z) {
            using T = decltype(z);
            cpu::cross_entropy_backward<T>(n, v, logits.data<T>(), targets.data<int32_t>(),
                                           ignore_index, label_smoothing, row_max.data<T>(),
                                           row_logsum.data<T>(), scale, d.data<T>());
          });
          return autograd::Grads{d};
        });
  }
  return res;
}

}  // namespace tfm
