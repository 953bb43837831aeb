#include "tfm/nn/linear.h"

#include "tfm/autograd/tape.h"
#include "tfm/core/profile.h"
#include "tfm/ops/init.h"

namespace tfm::nn {

void LinearKernel::set_train_compute(ComputeType t) {
  TFM_CHECK(t == ComputeType::float32 || t == ComputeType::bfloat16)
      << "linear layers train in fp32 or bf16, not " << compute_type_name(t);
  train_compute_ = t;
}

void LinearKernel::bind(const Tensor& w, ComputeType t, bool sequences, bool lookups) {
  TFM_CHECK(t != ComputeType::automatic) << "bind: resolve the compute type first";
  if (t == ComputeType::float32 && w.device() != Device::cpu) {
    bound_.reset();  // a device's fp32 path is the parameters' own GEMM: nothing to prepare
    return;
  }
  bound_ = std::make_shared<const LowpWeight>(w, t, sequences, lookups);
}

ComputeType LinearKernel::inference_compute() const {
  return bound_ ? bound_->precision() : ComputeType::float32;
}

Tensor LinearKernel::forward(const Tensor& x, const Tensor& w, const Tensor& b,
                             Activation act) const {
  if (autograd::needs_grad({&x, &w, &b})) {
    bound_.reset();  // training: the weights are about to move
    TFM_CHECK(w.defined()) << "linear: this layer's f32 weights were released for inference";
    return linear(x, w, b, act, train_compute_);
  }
  profile::Scope scope(profile::Phase::gemm);
  Tensor y = inference_forward(x, w, b, act);
  if (profile::enabled() && x.dim() > 0 && y.dim() > 0)  // 2 · rows · outputs · inputs
    profile::add_gemm_flops(2.0 * static_cast<double>(y.numel()) * static_cast<double>(x.size(-1)));
  return y;
}

Tensor LinearKernel::inference_forward(const Tensor& x, const Tensor& w, const Tensor& b,
                                       Activation act) const {
  // f64 inputs (reference checks) and layers bound to nothing take the op's own path.
  if (!bound_ || x.dtype() != DType::f32) {
    TFM_CHECK(w.defined()) << "linear: this layer's f32 weights were released for inference";
    return linear(x, w, b, act);
  }
  return linear_lowp(x, *bound_, b, act);
}

Linear::Linear(int64_t in, int64_t out, bool bias, Generator& gen) : in_(in), out_(out) {
  if (gen.allocates_weights()) {
    weight_ = Tensor::empty({out, in});
    xavier_uniform_(weight_, gen);
  }
  register_parameter("weight", &weight_);
  if (bias) {
    bias_ = Tensor::zeros({out});
    register_parameter("bias", &bias_);
  }
}

void Linear::bind(ComputeType t, bool keep_f32, bool sequences) {
  TFM_CHECK(weight_.defined()) << "bind: this layer's f32 weights were released already";
  kernel_.bind(weight_, t, sequences);
  if (!keep_f32 && binding_replaces_weight(t, weight_.device())) weight_ = Tensor();
}

void Linear::bind_from(const Tensor& w, ComputeType t, bool sequences) {
  TFM_CHECK(w.defined() && w.shape() == Shape({out_, in_}))
      << "bind_from: expected a weight (" << out_ << ", " << in_ << "), got "
      << (w.defined() ? w.describe() : std::string("an undefined tensor"));
  TFM_CHECK(binding_replaces_weight(t, w.device()))
      << "bind_from: fp32 on " << device_name(w.device()) << " runs on the parameter itself";
  kernel_.bind(w, t, sequences);
}

LayerNorm::LayerNorm(int64_t width, double eps) : eps_(eps) {
  weight_ = Tensor::ones({width});
  bias_ = Tensor::zeros({width});
  register_parameter("weight", &weight_);
  register_parameter("bias", &bias_);
}

}  // namespace tfm::nn
