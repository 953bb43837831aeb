// Linear and LayerNorm modules: parameters plus a call of the fused op.
#pragma once

#include <memory>
#include <mutex>

#include "tfm/core/rng.h"
#include "tfm/nn/module.h"
#include "tfm/ops/layer_norm.h"
#include "tfm/ops/linear.h"
#include "tfm/ops/linear_lowp.h"

namespace tfm::nn {

// The precision a linear map runs in when no gradient is needed, and its weight prepared for
// it. The fp32 parameters stay the truth (training, saving); the bf16/int8 copy is made on first
// use, kept, and made again when the weight changes. fp32 inference of at most kPackedMaxRows
// rows (decoding steps) runs on a packed copy of the same values (ops/cpu/packed_f32_cpu.h):
// same maths, its own summation order, so results may differ from the training path in the
// last bits; set_fp32_packing(false) keeps fp32 inference on the training path. A change is noticed
// by the weight's address and shape, a sample of its values, and any forward that needs gradients
// (training is about to update it); after editing weights in place some other way, call
// invalidate(). Forwards that need gradients (training) run their GEMMs in the training matmul
// precision instead: fp32, or bf16 mixed precision (ops/linear.h, ComputeType).
class PrecisionSwitch {
 public:
  // Above this many rows (an encoder batch, validation) the plain path is as fast.
  static constexpr int64_t kPackedMaxRows = 128;

  void set_precision(ComputeType p);
  ComputeType precision() const { return precision_; }
  void set_fp32_packing(bool on);
  bool fp32_packing() const { return pack_fp32_; }
  void set_train_precision(ComputeType p) { train_precision_ = p; }
  ComputeType train_precision() const { return train_precision_; }
  // act(x·wᵀ + b): in the set precision when no input needs a gradient, in the training
  // precision otherwise.
  Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, Activation act) const;
  void invalidate() const;
  // The prepared copy, made now if missing or stale (null for fp32 without packing).
  std::shared_ptr<const LowpWeight> prepared(const Tensor& w) const;

 private:
  struct Fingerprint {
    const void* data = nullptr;
    Shape shape;
    uint64_t sample = 0;
    bool operator==(const Fingerprint&) const = default;
  };
  static Fingerprint fingerprint(const Tensor& w);

  ComputeType precision_ = ComputeType::float32;
  ComputeType train_precision_ = ComputeType::float32;
  bool pack_fp32_ = true;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const LowpWeight> prepared_;
  mutable Fingerprint prepared_from_;
};

class Linear : public Module {
 public:
  // weight (out, in) Xavier uniform, bias zeros (as the seeds' initialize_weight).
  Linear(int64_t in, int64_t out, bool bias, Generator& gen);
  Tensor operator()(const Tensor& x, Activation act = Activation::none) const {
    return precision_.linear(x, weight_, bias_, act);
  }
  // Inference precision (see PrecisionSwitch); training runs in the training precision.
  void set_precision(ComputeType p) { precision_.set_precision(p); }
  void set_train_precision(ComputeType p) { precision_.set_train_precision(p); }
  ComputeType train_precision() const { return precision_.train_precision(); }
  ComputeType precision() const { return precision_.precision(); }
  void set_fp32_packing(bool on) { precision_.set_fp32_packing(on); }
  void invalidate_prepared() const { precision_.invalidate(); }

  Tensor weight_;  // (out, in)
  Tensor bias_;    // (out) or undefined

 private:
  PrecisionSwitch precision_;
};

class LayerNorm : public Module {
 public:
  LayerNorm(int64_t width, double eps);
  Tensor operator()(const Tensor& x) const { return layer_norm(x, weight_, bias_, eps_); }
  // LN(x + residual), and the sum itself (the residual stream of the next sub-layer).
  AddLayerNormResult add(const Tensor& x, const Tensor& residual) const {
    return add_layer_norm(x, residual, weight_, bias_, eps_);
  }
  Tensor weight_, bias_;  // (C)
  double eps_;
};

}  // namespace tfm::nn
