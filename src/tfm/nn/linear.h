// Linear and LayerNorm modules: parameters plus a call of the fused op.
#pragma once

#include <memory>

#include "tfm/core/rng.h"
#include "tfm/nn/module.h"
#include "tfm/ops/layer_norm.h"
#include "tfm/ops/linear.h"
#include "tfm/ops/linear_lowp.h"

namespace tfm::nn {

// How a linear map runs: in training (a forward that needs gradients) the op `linear` at the
// training compute type (fp32, or bf16 mixed precision) on the f32 parameters; for inference, on
// the weight bound once for one compute type (bind), or on the parameters when nothing is bound.
// Binding is explicit and made once (the Transformer does it when a model is loaded for
// inference): no per-call check of the weights. A forward that needs gradients drops the binding,
// since the optimiser is about to move the weights; bind again after training.
//
// Every binding runs every product without gradients on the bound weight, whatever its row count:
// fp32 packs the same values into panels (ops/cpu/packed_f32_cpu.h: its own summation order, so
// results equal the training path's to rounding; on a 2-core Zen 2 as fast as oneDNN's GEMM for
// an encoder's hundreds of rows and faster for decoding's few), bf16 and int8 convert them. So the
// f32 parameters can be released to hold one copy of each weight (bind's keep_f32 = false, or a
// layer bound straight from a file's tensor: bind_from); such a layer can no longer train, and
// f64 inputs (reference checks), which take the plain path, need the parameters.
// On cuda, bf16 and int8 binding prepare the weight on the device (LowpWeight) and fp32 binds
// nothing: the parameters' cuBLASLt GEMM is already the fp32 path there (never released).
class LinearKernel {
 public:
  void set_train_compute(ComputeType t);  // float32 | bfloat16
  ComputeType train_compute() const { return train_compute_; }
  // Prepares w (out, in) for inference at `t` (float32, bfloat16 or int8; resolved); `sequences`
  // for a layer that multiplies whole sequences, `lookups` for a tied table's (LowpWeight).
  void bind(const Tensor& w, ComputeType t, bool sequences = false, bool lookups = false);
  void unbind() { bound_.reset(); }
  // The bound compute type; float32 when nothing is bound (the plain path).
  ComputeType inference_compute() const;
  bool bound() const { return bound_ != nullptr; }
  const LowpWeight* bound_weight() const { return bound_.get(); }

  // act(x·wᵀ + b) as described above. w may be undefined (released) only for a layer bound on
  // the CPU (or to bf16/int8 on cuda), and then only without gradients and for f32 inputs.
  Tensor forward(const Tensor& x, const Tensor& w, const Tensor& b, Activation act) const;

 private:
  // forward() without gradients: the bound kernel, or the op's path.
  Tensor inference_forward(const Tensor& x, const Tensor& w, const Tensor& b, Activation act) const;
  ComputeType train_compute_ = ComputeType::float32;
  mutable std::shared_ptr<const LowpWeight> bound_;  // dropped by a forward that needs gradients
};

class Linear : public Module {
 public:
  // weight (out, in) Xavier uniform, bias zeros (as the seeds' initialize_weight); the weight
  // left undefined where gen does not allocate weights (Generator::weights_unallocated).
  Linear(int64_t in, int64_t out, bool bias, Generator& gen);
  Tensor operator()(const Tensor& x, Activation act = Activation::none) const {
    return kernel_.forward(x, weight_, bias_, act);
  }
  LinearKernel& kernel() { return kernel_; }
  const LinearKernel& kernel() const { return kernel_; }
  // Binds the weight for inference (see LinearKernel); without keep_f32, a binding that replaces
  // the f32 weight (any on the CPU; bf16/int8 on cuda) releases it.
  void bind(ComputeType t, bool keep_f32 = true, bool sequences = false);
  // Binds `w` (out, in) f32, a file's copy of this layer's weight, and leaves the parameter as it
  // is (undefined, in a model built with Generator::weights_unallocated): the weight is never
  // held in f32 (load_model_for_inference). Not on cuda in fp32, where the parameter is the path.
  void bind_from(const Tensor& w, ComputeType t, bool sequences = false);
  // Whether binding at `t` on `device` replaces the f32 weight (so keep_f32 = false releases it).
  static bool binding_replaces_weight(ComputeType t, Device device) {
    return device == Device::cpu || t != ComputeType::float32;
  }
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }

  Tensor weight_;  // (out, in); undefined once released, or never allocated (bind_from)
  Tensor bias_;    // (out) or undefined

 private:
  int64_t in_, out_;
  LinearKernel kernel_;
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
