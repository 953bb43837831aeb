// Linear and LayerNorm modules: parameters plus a call of the fused op.
#pragma once

#include "tfm/core/rng.h"
#include "tfm/nn/module.h"
#include "tfm/ops/layer_norm.h"
#include "tfm/ops/linear.h"

namespace tfm::nn {

class Linear : public Module {
 public:
  // weight (out, in) Xavier uniform, bias zeros (as the seeds' initialize_weight).
  Linear(int64_t in, int64_t out, bool bias, Generator& gen);
  Tensor operator()(const Tensor& x, Activation act = Activation::none) const {
    return linear(x, weight_, bias_, act);
  }
  Tensor weight_;  // (out, in)
  Tensor bias_;    // (out) or undefined
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
