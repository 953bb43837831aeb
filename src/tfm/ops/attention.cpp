#include "tfm/ops/attention.h"

#include <cmath>

#include "tfm/autograd/tape.h"
#include "tfm/ops/cpu/attention_cpu.h"
#include "tfm/ops/dispatch.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/attention.h"
#endif

namespace tfm {

namespace {

constexpr const char* kOp = "attention";

// Rows of (B, S, C) keys/values a forward-only call can read in place: each batch row's S·C
// values contiguous, at a batch stride of at least S·C (a view of a longer KV cache).
bool rows_in_place(const Tensor& t) {
  return t.defined() && t.dim() == 3 && t.device() == Device::cpu &&
         (t.dtype() == DType::f32 || t.dtype() == DType::f64) && t.strides()[2] == 1 &&
         t.strides()[1] == t.size(2) && t.strides()[0] >= t.size(1) * t.size(2);
}

}  // namespace

AttentionResult attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, int64_t heads,
                          const Tensor& key_padding_mask, const AttentionOptions& options) {
  const bool grad = autograd::needs_grad({&q_in, &k_in, &v_in});
  // Without a backward, keys/values strided by batch (a preallocated KV cache) are read as
  // they are instead of being copied every decoding step.
  const bool kv_in_place = !grad && rows_in_place(k_in) && rows_in_place(v_in) &&
                           k_in.strides() == v_in.strides() && !k_in.is_contiguous();
  Tensor q = check_float_input(q_in, kOp, "q");                       // (B, T, H·Dh)
  Tensor k = kv_in_place ? k_in : check_float_input(k_in, kOp, "k");  // (B, S, H·Dh)
  Tensor v = kv_in_place ? v_in : check_float_input(v_in, kOp, "v");  // (B, S, H·Dh)
  TFM_CHECK(q.dim() == 3 && k.dim() == 3 && v.dim() == 3)
      << kOp << ": q, k, v must be (B, T, H·Dh), (B, S, H·Dh), (B, S, H·Dh); got q " << q.describe()
      << ", k " << k.describe() << ", v " << v.describe();
  check_same_device(q, k, kOp);
  check_same_device(q, v, kOp);
  TFM_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype())
      << kOp << ": dtypes differ, q " << q.describe() << ", k " << k.describe() << ", v "
      << v.describe();
  const int64_t B = q.size(0), T = q.size(1), C = q.size(2), S = k.size(1);
  TFM_CHECK(k.size(0) == B && v.size(0) == B) << kOp << ": batch sizes differ, q " << q.describe()
                                              << ", k " << k.describe() << ", v " << v.describe();
  TFM_CHECK(v.size(1) == S) << kOp << ": k and v lengths differ, k " << k.describe() << " vs v "
                            << v.describe();
  TFM_CHECK(k.size(2) == C && v.size(2) == C) << kOp << ": widths differ, q " << q.describe()
                                              << ", k " << k.describe() << ", v " << v.describe();
  TFM_CHECK(heads > 0 && C > 0 && C % heads == 0)
      << kOp << ": " << heads << " heads do not divide the width " << C << " of q " << q.describe();
  const int64_t Dh = C / heads;

  Tensor mask;
  if (key_padding_mask.defined()) {
    TFM_CHECK(key_padding_mask.dtype() == DType::u8 && key_padding_mask.dim() == 2 &&
              key_padding_mask.size(0) == B && key_padding_mask.size(1) == S)
        << kOp << ": key_padding_mask must be u8 (B, S) = " << shape_str({B, S}) << ", got "
        << key_padding_mask.describe();
    check_same_device(q, key_padding_mask, kOp);
    mask = key_padding_mask.contiguous();
  }
  const double p = options.dropout;
  TFM_CHECK(p >= 0.0 && p < 1.0) << kOp << ": dropout p must be in [0, 1), got " << p;
  TFM_CHECK(std::isfinite(options.scale))
      << kOp << ": scale must be finite (0 = 1/sqrt(Dh)), got " << options.scale;

  cpu::AttentionShape shape{B, heads, T, S, Dh, kv_in_place ? k.strides()[0] : 0};
  cpu::AttentionConfig config;
  config.scale = options.scale != 0.0 ? options.scale : 1.0 / std::sqrt(static_cast<double>(Dh));
  config.causal = options.causal;
  config.key_padding_mask = mask.defined() ? mask.data<uint8_t>() : nullptr;
  config.dropout = p;
  if (p > 0) {
    Generator& gen = options.generator ? *options.generator : default_generator();
    const RandomStream stream = gen.next_stream();
    config.seed = stream.seed();
    config.stream = stream.id();
  }

  const Device device = q.device();
  TFM_CHECK(!(on_cuda(q) && options.return_weights))
      << kOp << ": the CUDA kernel does not return attention weights";
  AttentionResult result;
  result.out = Tensor::empty({B, T, C}, q.dtype(), device);
  // The logsumexp per row is all the backward needs from the forward; the CPU kernel skips it
  // when no backward follows.
  Tensor lse = grad || on_cuda(q) ? Tensor::empty({B, heads, T}, q.dtype(), device) : Tensor();
  if (options.return_weights) result.weights = Tensor::empty({B, heads, T, S}, q.dtype());
#ifdef TFM_WITH_CUDA
  if (on_cuda(q))
    cuda::attention_forward(shape, config, q.data<float>(), k.data<float>(), v.data<float>(),
                            result.out.data<float>(), lse.data<float>());
#endif
  if (!on_cuda(q))
    dispatch_floating(q.dtype(), kOp, [&](auto zero) {
      using F = decltype(zero);
      cpu::attention_forward<F>(shape, config, q.data<F>(), k.data<F>(), v.data<F>(),
                                result.out.data<F>(), grad ? lse.data<F>() : nullptr,
                                options.return_weights ? result.weights.data<F>() : nullptr);
    });
  if (!grad) return result;

  const Tensor out = result.out.detach(), weights = result.weights.detach();
  auto backward = [=](const autograd::Grads& g, const autograd::Needs& needs) {
    Tensor grad_out = g[0].contiguous();                               // (B, T, C)
    Tensor grad_w = weights.defined() ? g[1].contiguous() : Tensor();  // (B, H, T, S)
    Tensor dq = Tensor::empty(q.shape(), q.dtype(), device);
    Tensor dk = Tensor::empty(k.shape(), k.dtype(), device);
    Tensor dv = Tensor::empty(v.shape(), v.dtype(), device);
    cpu::AttentionConfig cfg = config;
    cfg.key_padding_mask = mask.defined() ? mask.data<uint8_t>() : nullptr;
#ifdef TFM_WITH_CUDA
    if (on_cuda(q)) {
      cuda::attention_backward(shape, cfg, q.data<float>(), k.data<float>(), v.data<float>(),
                               out.data<float>(), lse.data<float>(), grad_out.data<float>(),
                               dq.data<float>(), dk.data<float>(), dv.data<float>());
      return autograd::Grads{needs[0] ? dq : Tensor(), needs[1] ? dk : Tensor(),
                             needs[2] ? dv : Tensor()};
    }
#endif
    dispatch_floating(q.dtype(), kOp, [&](auto zero) {
      using F = decltype(zero);
      cpu::attention_backward<F>(
          shape, cfg, q.data<F>(), k.data<F>(), v.data<F>(), out.data<F>(), lse.data<F>(),
          grad_out.data<F>(), weights.defined() ? weights.data<F>() : nullptr,
          grad_w.defined() ? grad_w.data<F>() : nullptr, dq.data<F>(), dk.data<F>(), dv.data<F>());
    });
    return autograd::Grads{needs[0] ? dq : Tensor(), needs[1] ? dk : Tensor(),
                           needs[2] ? dv : Tensor()};
  };
  if (options.return_weights)
    autograd::record(kOp, {&q_in, &k_in, &v_in}, {&result.out, &result.weights}, backward);
  else
    autograd::record(kOp, {&q_in, &k_in, &v_in}, {&result.out}, backward);
  return result;
}

}  // namespace tfm
