// Linear layers for inference with weights prepared once: bf16 and int8 (--precision bf16|int8)
// and, for fp32, the same values packed into panels for the few-row GEMMs of decoding. Used by
// nn::Linear and the output projection when no gradient is needed. On the CPU, or (bf16 and int8)
// on cuda: a weight on the device is prepared there and multiplies device inputs (cuBLASLt's bf16
// and int8 tensor-core GEMMs, ops/cuda/lowp_linear.h), with the CPU's roundings and integers.
#pragma once

#include <memory>
#include <string_view>

#include "tfm/core/tensor.h"
#include "tfm/ops/activation.h"

namespace tfm {

namespace cpu {
struct PackedWeights;
}
struct DeviceLowpWeights;  // a weight prepared on cuda (linear_lowp.cpp)

// A linear weight converted for `precision`: bf16 or int8, or fp32 packed (values unchanged).
// Immutable once made; a copy shares it.
class LowpWeight {
 public:
  // weight f32 (out, in). `sequences`: the layer multiplies whole sequences (an encoder's), not
  // the few rows of a decoding step; bf16 then packs for oneDNN's kernel where the CPU has
  // AVX512-BF16 (ops/cpu/lowp_matmul_cpu.h). A weight on cuda is prepared there for bf16 (the
  // CPU's rounding) or int8 (quantised on the host as the CPU quantises, zero-padded for the
  // tensor cores); fp32 on cuda is an error (the parameters' own GEMMs are the fp32 path there).
  // `lookups`: the weight is also a tied embedding table, read by lowp_weight_rows (int8 then
  // keeps what its packed layout cannot give back: q row-major beside oneDNN's layout, the
  // dequantised rows on cuda).
  LowpWeight(const Tensor& weight, ComputeType precision, bool sequences = false,
             bool lookups = false);
  ComputeType precision() const { return precision_; }
  Device device() const { return device_ ? Device::cuda : Device::cpu; }
  int64_t out_features() const;
  int64_t in_features() const;
  size_t bytes() const;  // of the packed copy (the only one kept)
  // Of what `lookups` keeps beside it (0 where the packed copy gives the rows back), a block of
  // its own.
  size_t lookup_bytes() const;
  // int8: the quantisation scale of each output channel, max|w[n, :]| / 127 (empty for bf16).
  const std::vector<float>& scales() const;
  const cpu::PackedWeights& packed() const;         // a CPU weight's
  const DeviceLowpWeights& device_weights() const;  // a cuda weight's

 private:
  ComputeType precision_;
  std::shared_ptr<const cpu::PackedWeights> packed_;
  std::shared_ptr<const DeviceLowpWeights> device_;
};

// y = act(x·wᵀ + bias) with w prepared: x (..., in) f32, bias (out) f32 or undefined, on w's
// device; returns (..., out) f32 there. Inference only: records nothing for autograd (a caller
// that needs gradients uses linear()). bf16 carries inf/NaN through as fp32 does; int8 rejects
// them (no scale fits): at once on the CPU, at the next copy to the host on cuda (a device fault).
Tensor linear_lowp(const Tensor& x, const LowpWeight& w, const Tensor& bias = Tensor(),
                   Activation act = Activation::none);

// Rows of a prepared weight as an embedding lookup of it: ids i32 (...) on w's device -> (..., in)
// f32. fp32 packed on the CPU: bitwise the rows the weight was made from; int8 (the CPU's, or one
// prepared on cuda with `lookups`): the quantised rows dequantised, q · scale, as CTranslate2's
// int8 embeddings are. For a tied embedding table whose lookups follow the output projection's
// binding (Transformer::bind_inference). bf16 is refused. An id outside [0, out) is an error
// naming it.
Tensor lowp_weight_rows(const Tensor& ids, const LowpWeight& w);

}  // namespace tfm
