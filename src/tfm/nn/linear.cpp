#include "tfm/nn/linear.h"

#include <cstring>

#include "tfm/autograd/tape.h"
#include "tfm/ops/init.h"

namespace tfm::nn {

void PrecisionSwitch::set_precision(ComputeType p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (p != precision_) prepared_.reset();
  precision_ = p;
}

void PrecisionSwitch::set_fp32_packing(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  if (on != pack_fp32_ && precision_ == ComputeType::float32) prepared_.reset();
  pack_fp32_ = on;
}

void PrecisionSwitch::invalidate() const {
  std::lock_guard<std::mutex> lock(mu_);
  prepared_.reset();
}

PrecisionSwitch::Fingerprint PrecisionSwitch::fingerprint(const Tensor& w) {
  Fingerprint f{w.raw_data(), w.shape(), 0};
  // 64 values spread over the weight, the last included: an optimiser step or a loaded
  // checkpoint changes them, and reading them costs nothing next to the GEMM.
  const int64_t n = w.numel();
  if (n == 0 || w.dtype() != DType::f32 || !w.is_contiguous()) return f;
  const float* p = w.data<float>();
  uint64_t h = 1469598103934665603ull;
  // Index floor((n - 1) · i / 63), stepped without a division per sample: this runs on every
  // inference linear call, and 64 divisions were 1 % of a decoding run.
  const int64_t step = (n - 1) / 63, rem = (n - 1) % 63;
  int64_t at = 0, carry = 0;
  for (int64_t i = 0; i < 64; ++i) {
    uint32_t bits;
    std::memcpy(&bits, p + at, 4);
    h = (h ^ bits) * 1099511628211ull;
    at += step;
    carry += rem;
    if (carry >= 63) carry -= 63, ++at;
  }
  f.sample = h;
  return f;
}

std::shared_ptr<const LowpWeight> PrecisionSwitch::prepared(const Tensor& w) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (precision_ == ComputeType::float32 && !pack_fp32_) return nullptr;
  Fingerprint now = fingerprint(w);
  if (!prepared_ || !(now == prepared_from_)) {
    prepared_ = std::make_shared<const LowpWeight>(w, precision_);
    prepared_from_ = std::move(now);
  }
  return prepared_;
}

Tensor PrecisionSwitch::linear(const Tensor& x, const Tensor& w, const Tensor& b,
                               Activation act) const {
  // f64 (reference checks) has no prepared path.
  if (x.dtype() != DType::f32) return tfm::linear(x, w, b, act);
  if (autograd::needs_grad({&x, &w, &b})) {
    invalidate();  // training: the weights are about to move
    return tfm::linear(x, w, b, act, train_precision_);
  }
  const bool fp32 = precision_ == ComputeType::float32;
  // The packed copy is of an f32 CPU weight; anything else keeps the op's own path.
  const bool packable = x.device() == Device::cpu && w.dtype() == DType::f32 &&
                        w.device() == Device::cpu && (!b.defined() || b.dtype() == DType::f32);
  if (fp32 && (!pack_fp32_ || !packable)) return tfm::linear(x, w, b, act);
  const int64_t rows = x.dim() == 0 || x.size(-1) == 0 ? 0 : x.numel() / x.size(-1);
  if (fp32 && (rows == 0 || rows > kPackedMaxRows)) return tfm::linear(x, w, b, act);
  return linear_lowp(x, *prepared(w), b, act);
}

Linear::Linear(int64_t in, int64_t out, bool bias, Generator& gen) {
  weight_ = Tensor::empty({out, in});
  xavier_uniform_(weight_, gen);
  register_parameter("weight", &weight_);
  if (bias) {
    bias_ = Tensor::zeros({out});
    register_parameter("bias", &bias_);
  }
}

LayerNorm::LayerNorm(int64_t width, double eps) : eps_(eps) {
  weight_ = Tensor::ones({width});
  bias_ = Tensor::zeros({width});
  register_parameter("weight", &weight_);
  register_parameter("bias", &bias_);
}

}  // namespace tfm::nn
