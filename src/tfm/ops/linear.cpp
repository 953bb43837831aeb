#include "tfm/ops/linear.h"

#include <type_traits>

#include "tfm/autograd/tape.h"
#include "tfm/core/autograd_meta.h"
#include "tfm/ops/cpu/activation_cpu.h"
#include "tfm/ops/cpu/linear_cpu.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/dispatch.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/elementwise.h"
#include "tfm/ops/cuda/gemm.h"
#endif

namespace tfm {

namespace {

// x rounded to bf16, as a bf16 tensor of the same shape on x's device (contiguous f32 in).
Tensor rounded_to_bf16(const Tensor& x) {
  Tensor r = Tensor::empty(x.shape(), DType::bf16, x.device());
  round_to_bf16(x, r);
  return r;
}

// The weight's bf16 rounding: the copy its optimiser keeps when there is one, else made now.
Tensor bf16_weight(const Tensor& w) {
  const AutogradMeta* m = w.autograd_meta().get();
  if (m != nullptr && m->bf16_copy.defined() && m->bf16_copy_of == w.raw_data() &&
      m->bf16_copy.shape() == w.shape() && m->bf16_copy.device() == w.device())
    return m->bf16_copy;
  return rounded_to_bf16(w);
}

const uint16_t* bf16_data(const Tensor& t) {
  return t.defined() ? static_cast<const uint16_t*>(t.raw_data()) : nullptr;
}

// What the activation's backward needs: its output for relu (y > 0 exactly where z > 0), its
// input z for gelu, silu and gelu_tanh, nothing otherwise.
Tensor activation_saved(Activation act, const Tensor& y, const Tensor& z) {
  if (act == Activation::relu) return y.detach();
  if (cpu::activation_needs_input(act)) return z.detach();
  return Tensor();
}

// dz (M, out), the gradient at the pre-activation, from gy and activation_saved's tensor.
Tensor pre_activation_grad(const Tensor& gy, Activation act, const Tensor& saved) {
  if (act == Activation::none) return gy;
  Tensor dz = Tensor::empty(gy.shape(), gy.dtype(), gy.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(gy)) {
    if (act == Activation::relu)
      cuda::relu_backward(gy.numel(), gy.data<float>(), saved.data<float>(), dz.data<float>());
    if (cpu::activation_needs_input(act))
      cuda::input_activation_backward(act, gy.numel(), gy.data<float>(), saved.data<float>(),
                                      dz.data<float>());
    return dz;
  }
#endif
  dispatch_floating(gy.dtype(), "linear backward", [&](auto tag) {
    using T = decltype(tag);
    if (act == Activation::relu)
      cpu::relu_backward<T>(gy.numel(), gy.data<T>(), saved.data<T>(), dz.data<T>());
    cpu::input_activation_backward<T>(act, gy.numel(), gy.data<T>(), saved.data<T>(), dz.data<T>());
  });
  return dz;
}

}  // namespace

void attach_bf16_copy(const Tensor& param, const Tensor& copy) {
  TFM_CHECK(param.defined() && param.autograd_meta() != nullptr)
      << "attach_bf16_copy: the parameter must require grad";
  AutogradMeta& m = *param.autograd_meta();
  if (!copy.defined()) {
    m.bf16_copy = Tensor();
    m.bf16_copy_of = nullptr;
    return;
  }
  TFM_CHECK(copy.dtype() == DType::bf16 && copy.shape() == param.shape() &&
            copy.device() == param.device() && copy.is_contiguous())
      << "attach_bf16_copy: copy " << copy.describe() << " for parameter " << param.describe();
  m.bf16_copy = copy;
  m.bf16_copy_of = param.raw_data();
}

void round_to_bf16(const Tensor& x, const Tensor& out) {
  TFM_CHECK(x.defined() && out.defined() && x.dtype() == DType::f32 && out.dtype() == DType::bf16 &&
            x.is_contiguous() && out.is_contiguous() && x.numel() == out.numel() &&
            x.device() == out.device())
      << "round_to_bf16: expected contiguous f32 x and bf16 out of one size and device, got "
      << (x.defined() ? x.describe() : "undefined") << " and "
      << (out.defined() ? out.describe() : "undefined");
  auto* dst = static_cast<uint16_t*>(out.raw_data());
#ifdef TFM_WITH_CUDA
  if (on_cuda(x)) {
    cuda::float_to_bf16(x.numel(), x.data<float>(), dst);
    return;
  }
#endif
  cpu::float_to_bf16(x.numel(), x.data<float>(), dst);
}

Tensor linear(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, Activation act,
              ComputeType precision) {
  Tensor x = check_float_input(x_in, "linear", "x");
  Tensor w = check_float_input(w_in, "linear", "weight");
  TFM_CHECK(x.dim() >= 1) << "linear: x must have at least one dimension, got " << x.describe();
  TFM_CHECK(w.dim() == 2) << "linear: weight must be (out_features, in_features), got "
                          << w.describe();
  TFM_CHECK(x.size(-1) == w.size(1))
      << "linear: input " << x.describe() << " does not match weight " << w.describe()
      << " in_features (" << w.size(1) << ")";
  check_same_dtype(x, w, "linear");
  check_same_device(x, w, "linear");
  TFM_CHECK(precision == ComputeType::float32 || precision == ComputeType::bfloat16)
      << "linear: " << compute_type_name(precision)
      << (precision == ComputeType::int8 ? " is an inference compute type (linear_lowp)"
                                         : " must be resolved to fp32 or bf16 first");
  const int64_t out = w.size(0), in = w.size(1);
  Tensor b;
  if (b_in.defined()) {
    b = check_float_input(b_in, "linear", "bias");
    TFM_CHECK(b.dim() == 1 && b.size(0) == out)
        << "linear: bias " << b.describe() << " does not match weight " << w.describe()
        << " out_features (" << out << ")";
    check_same_dtype(b, w, "linear");
    check_same_device(b, w, "linear");
  }

  Shape out_shape = x.shape();
  out_shape.back() = out;
  const int64_t rows = shape_numel(Shape(out_shape.begin(), out_shape.end() - 1));  // M of (M, in)
  const bool bf16 = precision == ComputeType::bfloat16;
  TFM_CHECK(!bf16 || x.dtype() == DType::f32)
      << "linear: bf16 matmuls take f32 tensors, got x " << x.describe();
  const bool grad = autograd::needs_grad({&x_in, &w_in, &b_in});
  // gelu's (silu's, gelu_tanh's) derivative needs its input: in grad mode the GEMM stops at the
  // bias and keeps z.
  const bool split_gelu = grad && cpu::activation_needs_input(act);
  const Activation gemm_act = split_gelu ? Activation::none : act;
  // The GEMM's operands: x and w themselves, or their bf16 roundings (which the backward then
  // keeps instead of the f32 tensors: half the memory).
  const Tensor xg = bf16 ? rounded_to_bf16(x) : x.detach();
  const Tensor wg = bf16 ? bf16_weight(w) : w.detach();
  Tensor z = Tensor::empty(out_shape, x.dtype(), x.device());
  Tensor y = z;
#ifdef TFM_WITH_CUDA
  if (on_cuda(x)) {
    const float* bias = b.defined() ? b.data<float>() : nullptr;
    if (bf16)
      cuda::linear_forward_bf16(rows, out, in, bf16_data(xg), bf16_data(wg), bias, gemm_act,
                                z.data<float>());
    else
      cuda::linear_forward(rows, out, in, x.data<float>(), w.data<float>(), bias, gemm_act,
                           z.data<float>());
    if (split_gelu) {
      y = Tensor::empty(out_shape, x.dtype(), x.device());
      cuda::input_activation_forward(act, z.numel(), z.data<float>(), y.data<float>());
    }
  }
#endif
  if (!on_cuda(x))
    dispatch_floating(x.dtype(), "linear", [&](auto tag) {
      using T = decltype(tag);
      const T* bias = b.defined() ? b.data<T>() : nullptr;
      if (!bf16)
        cpu::linear_forward<T>(rows, out, in, x.data<T>(), w.data<T>(), bias, gemm_act,
                               z.data<T>());
      if constexpr (std::is_same_v<T, float>) {  // bf16 takes f32 only (checked above)
        if (bf16)
          cpu::linear_forward_bf16(rows, out, in, bf16_data(xg), bf16_data(wg), bias, gemm_act,
                                   z.data<T>());
      }
      if (split_gelu) {
        y = Tensor::empty(out_shape, x.dtype());
        cpu::input_activation_forward<T>(act, z.numel(), z.data<T>(), y.data<T>());
      }
    });
  if (!grad) return y;

  // Keep only what the backward can use: x for dW, W for dX, and the activation's tensor.
  Tensor saved_x = w_in.requires_grad() ? xg : Tensor();
  Tensor saved_w = x_in.requires_grad() ? wg : Tensor();
  Tensor saved_act = activation_saved(act, y, z);
  autograd::record(
      bf16 ? "linear(bf16)" : "linear", {&x_in, &w_in, &b_in}, {&y},
      [saved_x, saved_w, saved_act, act, bf16, rows, out, in, x_shape = x.shape()](
          const autograd::Grads& g, const autograd::Needs& needs) {
        Tensor gy = g[0].contiguous();
        const DType dtype = gy.dtype();
        Tensor dz = pre_activation_grad(gy, act, saved_act);
        const Device device = gy.device();
        Tensor dx = needs[0] ? Tensor::empty(x_shape, dtype, device) : Tensor();
        // A parameter's gradient goes straight into its arena slot when it has one.
        Tensor dw = needs[1] ? autograd::grad_output(1, {out, in}, dtype, device) : Tensor();
        Tensor db = needs[2] ? autograd::grad_output(2, {out}, dtype, device) : Tensor();
#ifdef TFM_WITH_CUDA
        if (on_cuda(gy)) {
          float* pdx = dx.defined() ? dx.data<float>() : nullptr;
          float* pdw = dw.defined() ? dw.data<float>() : nullptr;
          float* pdb = db.defined() ? db.data<float>() : nullptr;
          if (bf16)
            cuda::linear_backward_bf16(rows, out, in, dz.data<float>(),
                                       pdw ? bf16_data(saved_x) : nullptr,
                                       pdx ? bf16_data(saved_w) : nullptr, pdx, pdw, pdb);
          else
            cuda::linear_backward(rows, out, in, dz.data<float>(),
                                  pdw ? saved_x.data<float>() : nullptr,
                                  pdx ? saved_w.data<float>() : nullptr, pdx, pdw, pdb);
          return autograd::Grads{dx, dw, db};
        }
#endif
        dispatch_floating(dtype, "linear backward", [&](auto tag) {
          using T = decltype(tag);
          T* pdx = dx.defined() ? dx.data<T>() : nullptr;
          T* pdw = dw.defined() ? dw.data<T>() : nullptr;
          T* pdb = db.defined() ? db.data<T>() : nullptr;
          if (!bf16)
            cpu::linear_backward<T>(rows, out, in, dz.data<T>(), pdw ? saved_x.data<T>() : nullptr,
                                    pdx ? saved_w.data<T>() : nullptr, pdx, pdw, pdb);
          if constexpr (std::is_same_v<T, float>) {
            if (bf16)
              cpu::linear_backward_bf16(rows, out, in, dz.data<T>(),
                                        pdw ? bf16_data(saved_x) : nullptr,
                                        pdx ? bf16_data(saved_w) : nullptr, pdx, pdw, pdb);
          }
        });
        return autograd::Grads{dx, dw, db};
      });
  return y;
}

}  // namespace tfm
