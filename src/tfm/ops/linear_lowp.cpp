#include "tfm/ops/linear_lowp.h"

#include "tfm/core/check.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"

namespace tfm {

LowpWeight::LowpWeight(const Tensor& weight, ComputeType precision, bool sequences)
    : precision_(precision) {
  TFM_CHECK(weight.defined() && weight.dim() == 2 && weight.dtype() == DType::f32 &&
            weight.device() == Device::cpu)
      << "LowpWeight: expected an f32 CPU weight (out, in), got "
      << (weight.defined() ? weight.describe() : std::string("an undefined tensor"));
  const Tensor w = weight.contiguous();
  const ComputeType kind = precision == ComputeType::bfloat16 ? ComputeType::bfloat16
                           : precision == ComputeType::int8   ? ComputeType::int8
                                                              : ComputeType::float32;
  packed_ = cpu::pack_weights(kind, w.size(0), w.size(1), w.data<float>(), sequences);
}

int64_t LowpWeight::out_features() const {
  return packed_->n;
}
int64_t LowpWeight::in_features() const {
  return packed_->k;
}
size_t LowpWeight::bytes() const {
  return packed_->bytes;
}
const std::vector<float>& LowpWeight::scales() const {
  return packed_->scales;
}

Tensor linear_lowp(const Tensor& x_in, const LowpWeight& w, const Tensor& b_in, Activation act) {
  TFM_CHECK(x_in.defined() && x_in.dim() >= 1 && x_in.dtype() == DType::f32 &&
            x_in.device() == Device::cpu)
      << "linear (" << compute_type_name(w.precision()) << "): x must be an f32 CPU tensor, got "
      << (x_in.defined() ? x_in.describe() : std::string("an undefined tensor"));
  TFM_CHECK(x_in.size(-1) == w.in_features())
      << "linear (" << compute_type_name(w.precision()) << "): input " << x_in.describe()
      << " does not match in_features " << w.in_features();
  const int64_t out = w.out_features();
  Tensor b;
  if (b_in.defined()) {
    b = b_in.contiguous();
    TFM_CHECK(b.dim() == 1 && b.size(0) == out && b.dtype() == DType::f32)
        << "linear (" << compute_type_name(w.precision()) << "): bias " << b.describe()
        << " does not match out_features " << out;
  }
  const Tensor x = x_in.contiguous();
  Shape out_shape = x.shape();
  out_shape.back() = out;
  Tensor y = Tensor::empty(out_shape);
  const int64_t rows = x.numel() / w.in_features();  // M of (M, in)
  cpu::lowp_linear_forward(rows, x.data<float>(), w.packed(),
                           b.defined() ? b.data<float>() : nullptr, act, y.data<float>());
  return y;
}

}  // namespace tfm
