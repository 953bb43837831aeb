#include "tfm/ops/embedding.h"

#include <sstream>

#include "tfm/autograd/tape.h"
#include "tfm/ops/cpu/embedding_cpu.h"
#include "tfm/ops/dispatch.h"
#include "tfm/ops/host.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/embedding.h"
#endif

namespace tfm {

namespace {

// Multi-index of flat position i in shape, e.g. "(1, 2)", so an error points at the bad token.
std::string position_str(int64_t i, const Shape& shape) {
  Shape idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return shape_str(idx);
}

}  // namespace

Tensor embedding(const Tensor& ids_in, const Tensor& weight_in, int64_t padding_idx) {
  TFM_CHECK(ids_in.defined()) << "embedding: ids is undefined";
  TFM_CHECK(ids_in.dtype() == DType::i32)
      << "embedding: ids must be i32, got " << ids_in.describe();
  Tensor weight = check_float_input(weight_in, "embedding", "weight");
  check_same_device(ids_in, weight, "embedding");
  TFM_CHECK(weight.dim() == 2) << "embedding: weight must be (V, C), got " << weight.describe();
  const int64_t v = weight.size(0), c = weight.size(1);
  TFM_CHECK(padding_idx < v) << "embedding: padding_idx " << padding_idx
                             << " is not a row of weight " << weight.describe();
  if (padding_idx < 0) padding_idx = -1;

  Tensor ids = ids_in.contiguous();
  const int64_t n = ids.numel();
  // Checked here on the CPU, so its kernels trust every id. A device's ids are checked by its
  // kernel, which reports a bad one at the next copy to the host (core/cuda/device_fault.h):
  // copying them here would wait for the GPU at every decoding step.
  const int32_t* id = on_cuda(weight) ? nullptr : ids.data<int32_t>();
  if (id != nullptr) {
    const int64_t bad = cpu::find_bad_id(n, id, v);
    TFM_CHECK(bad < 0) << "embedding: id " << id[bad] << " at position "
                       << position_str(bad, ids.shape()) << " of ids " << ids.describe()
                       << " is outside [0, V) for V = " << v << " (weight " << weight.describe()
                       << ")";
  }

  Shape out_shape = ids.shape();  // (..., C)
  out_shape.push_back(c);
  Tensor out = Tensor::empty(out_shape, weight.dtype(), weight.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(weight))
    cuda::embedding_forward(n, ids.data<int32_t>(), v, c, weight.data<float>(), out.data<float>());
#endif
  if (!on_cuda(weight)) {
    dispatch_floating(weight.dtype(), "embedding", [&](auto z) {
      using T = decltype(z);
      cpu::embedding_forward<T>(n, id, c, weight.data<T>(), out.data<T>());
    });
  }

  if (autograd::needs_grad({&weight_in})) {
    // Keep our own ids: a caller refilling its batch buffer before backward must not change
    // where the gradient goes.
    if (ids.storage() == ids_in.storage()) ids = ids.clone();
    autograd::record("embedding", {&weight_in}, {&out},
                     [ids, v, c, padding_idx](const autograd::Grads& g, const autograd::Needs&) {
                       Tensor gy = g[0].contiguous();  // (..., C)
                       // (V, C), in the table's arena slot when it has one (every row written)
                       Tensor gw = autograd::grad_output(0, {v, c}, gy.dtype(), gy.device());
#ifdef TFM_WITH_CUDA
                       if (on_cuda(gy))
                         cuda::embedding_backward(ids.numel(), ids.data<int32_t>(), v, c,
                                                  padding_idx, gy.data<float>(), gw.data<float>());
#endif
                       if (!on_cuda(gy)) {
                         dispatch_floating(gy.dtype(), "embedding", [&](auto z) {
                           using T = decltype(z);
                           cpu::embedding_backward<T>(ids.numel(), ids.data<int32_t>(), v, c,
                                                      padding_idx, gy.data<T>(), gw.data<T>());
                         });
                       }
                       return autograd::Grads{gw};
                     });
  }
  return out;
}

}  // namespace tfm
