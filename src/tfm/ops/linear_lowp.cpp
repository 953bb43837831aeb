#include "tfm/ops/linear_lowp.h"

#include <cstring>

#include "tfm/core/check.h"
#include "tfm/core/device_copy.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/embedding.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/elementwise.h"
#include "tfm/ops/cuda/gemm.h"
#include "tfm/ops/cuda/lowp_linear.h"
#endif

namespace tfm {

// A weight prepared on cuda. bf16: w (N, K) bf16. int8: w (int8_padded(N), int8_padded(K)) s8
// with zeros in the padding, and the per-channel scales (N) f32 and column sums (N) s32, all
// on the device; the scales also on the host for scales(). rows: int8 prepared with `lookups`,
// q · scale (N, K) f32 on the device, what lookups of a tied table read.
struct DeviceLowpWeights {
  int64_t n = 0, k = 0;
  Tensor w, scales, sums, rows;
  std::vector<float> host_scales;
  size_t bytes = 0;
};

namespace {

std::string describe_or_undefined(const Tensor& t) {
  return t.defined() ? t.describe() : std::string("an undefined tensor");
}

#ifdef TFM_WITH_CUDA
// A host tensor's bytes copied into a new device tensor of the same shape and dtype.
Tensor upload(const Shape& shape, DType dtype, const void* data) {
  Tensor h = Tensor::empty(shape, dtype);
  std::memcpy(h.raw_data(), data, h.nbytes());
  return to_device(h, Device::cuda);
}

std::shared_ptr<const DeviceLowpWeights> prepare_on_device(const Tensor& w, ComputeType t,
                                                           bool lookups) {
  auto d = std::make_shared<DeviceLowpWeights>();
  d->n = w.size(0);
  d->k = w.size(1);
  TFM_CHECK(d->n > 0 && d->k > 0) << "LowpWeight: empty weight " << w.describe();
  if (t == ComputeType::bfloat16) {
    d->w = Tensor::empty({d->n, d->k}, DType::bf16, Device::cuda);
    cuda::float_to_bf16(d->n * d->k, w.data<float>(), static_cast<uint16_t*>(d->w.raw_data()));
  } else {
    // The CPU's quantisation of the host copy: the same s8 values, scales and sums.
    const Tensor h = to_device(w, Device::cpu);
    const int64_t n = d->n, k = d->k, np = cuda::int8_padded(n), kp = cuda::int8_padded(k);
    std::vector<int8_t> q(static_cast<size_t>(n * k)), padded(static_cast<size_t>(np * kp), 0);
    std::vector<int32_t> sums(static_cast<size_t>(n));
    d->host_scales.resize(static_cast<size_t>(n));
    cpu::quantize_weights_s8(n, k, h.data<float>(), q.data(), d->host_scales.data(), sums.data());
    for (int64_t r = 0; r < n; ++r) std::memcpy(&padded[r * kp], &q[r * k], static_cast<size_t>(k));
    d->w = upload({np, kp}, DType::i8, padded.data());
    d->scales = upload({n}, DType::f32, d->host_scales.data());
    d->sums = upload({n}, DType::i32, sums.data());
    if (lookups) {
      std::vector<float> rows(static_cast<size_t>(n * k));
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < k; ++c)
          rows[r * k + c] = static_cast<float>(q[r * k + c]) * d->host_scales[r];
      d->rows = upload({n, k}, DType::f32, rows.data());
    }
  }
  d->bytes = d->w.nbytes() + (d->scales.defined() ? d->scales.nbytes() + d->sums.nbytes() : 0);
  return d;
}

// linear_lowp on cuda: x (M, K) and y (M, N) contiguous device f32.
void device_linear(int64_t rows, const Tensor& x, const DeviceLowpWeights& d, ComputeType t,
                   const float* bias, Activation act, Tensor& y) {
  if (t == ComputeType::bfloat16) {
    Tensor xb = Tensor::empty(x.shape(), DType::bf16, Device::cuda);
    cuda::float_to_bf16(x.numel(), x.data<float>(), static_cast<uint16_t*>(xb.raw_data()));
    cuda::linear_forward_bf16(rows, d.n, d.k, static_cast<const uint16_t*>(xb.raw_data()),
                              static_cast<const uint16_t*>(d.w.raw_data()), bias, act,
                              y.data<float>());
    return;
  }
  cuda::linear_forward_int8(rows, d.n, d.k, x.data<float>(),
                            static_cast<const int8_t*>(d.w.raw_data()), d.scales.data<float>(),
                            d.sums.data<int32_t>(), bias, act, y.data<float>());
}
#endif

}  // namespace

LowpWeight::LowpWeight(const Tensor& weight, ComputeType precision, bool sequences, bool lookups)
    : precision_(precision) {
  TFM_CHECK(weight.defined() && weight.dim() == 2 && weight.dtype() == DType::f32)
      << "LowpWeight: expected an f32 weight (out, in), got " << describe_or_undefined(weight);
  const Tensor w = weight.contiguous();
  const ComputeType kind = precision == ComputeType::bfloat16 ? ComputeType::bfloat16
                           : precision == ComputeType::int8   ? ComputeType::int8
                                                              : ComputeType::float32;
  if (weight.device() != Device::cpu) {
    TFM_CHECK(kind != ComputeType::float32)
        << "LowpWeight: fp32 on " << device_name(weight.device())
        << " multiplies the parameters themselves; nothing to prepare";
#ifdef TFM_WITH_CUDA
    device_ = prepare_on_device(w, kind, lookups);
    return;
#endif
  }
  packed_ = cpu::pack_weights(kind, w.size(0), w.size(1), w.data<float>(), sequences, lookups);
}

int64_t LowpWeight::out_features() const {
  return device_ ? device_->n : packed_->n;
}
int64_t LowpWeight::in_features() const {
  return device_ ? device_->k : packed_->k;
}
size_t LowpWeight::bytes() const {
  return device_ ? device_->bytes : packed_->bytes;
}
size_t LowpWeight::lookup_bytes() const {
  return device_ ? (device_->rows.defined() ? device_->rows.nbytes() : 0) : packed_->rows_bytes;
}
const std::vector<float>& LowpWeight::scales() const {
  return device_ ? device_->host_scales : packed_->scales;
}
const cpu::PackedWeights& LowpWeight::packed() const {
  TFM_CHECK(packed_ != nullptr) << "LowpWeight: a weight prepared on cuda has no CPU packing";
  return *packed_;
}
const DeviceLowpWeights& LowpWeight::device_weights() const {
  TFM_CHECK(device_ != nullptr) << "LowpWeight: a weight prepared on the CPU has no device copy";
  return *device_;
}

Tensor linear_lowp(const Tensor& x_in, const LowpWeight& w, const Tensor& b_in, Activation act) {
  const char* name = compute_type_name(w.precision());
  const Device device = w.device();
  TFM_CHECK(x_in.defined() && x_in.dim() >= 1 && x_in.dtype() == DType::f32 &&
            x_in.device() == device)
      << "linear (" << name << "): x must be an f32 tensor on " << device_name(device)
      << ", where the weight was prepared, got " << describe_or_undefined(x_in)
      << (x_in.defined() ? std::string(" on ") + device_name(x_in.device()) : std::string());
  TFM_CHECK(x_in.size(-1) == w.in_features())
      << "linear (" << name << "): input " << x_in.describe() << " does not match in_features "
      << w.in_features();
  const int64_t out = w.out_features();
  Tensor b;
  if (b_in.defined()) {
    b = b_in.contiguous();
    TFM_CHECK(b.dim() == 1 && b.size(0) == out && b.dtype() == DType::f32 && b.device() == device)
        << "linear (" << name << "): bias " << b.describe() << " on " << device_name(b.device())
        << " does not match out_features " << out << " on " << device_name(device);
  }
  const Tensor x = x_in.contiguous();
  Shape out_shape = x.shape();
  out_shape.back() = out;
  Tensor y = Tensor::empty(out_shape, DType::f32, device);
  const int64_t rows = x.numel() / w.in_features();  // M of (M, in)
  const float* bias = b.defined() ? b.data<float>() : nullptr;
#ifdef TFM_WITH_CUDA
  if (device == Device::cuda) {
    if (rows > 0) device_linear(rows, x, w.device_weights(), w.precision(), bias, act, y);
    return y;
  }
#endif
  cpu::lowp_linear_forward(rows, x.data<float>(), w.packed(), bias, act, y.data<float>());
  return y;
}

Tensor lowp_weight_rows(const Tensor& ids_in, const LowpWeight& w) {
  const Device device = w.device();
  TFM_CHECK(w.precision() == ComputeType::int8 ||
            (w.precision() == ComputeType::float32 && device == Device::cpu))
      << "lowp_weight_rows: embedding lookups read fp32 weights packed on the CPU and int8 ones, "
      << "not " << compute_type_name(w.precision()) << " on " << device_name(device);
  TFM_CHECK(ids_in.defined() && ids_in.dtype() == DType::i32 && ids_in.device() == device)
      << "lowp_weight_rows: ids must be i32 on " << device_name(device) << ", where the weight "
      << "was prepared, got " << describe_or_undefined(ids_in);
#ifdef TFM_WITH_CUDA
  if (device == Device::cuda) {
    TFM_CHECK(w.device_weights().rows.defined())
        << "lowp_weight_rows: this int8 weight on cuda was prepared without lookups";
    return embedding(ids_in, w.device_weights().rows);
  }
#endif
  const Tensor ids = ids_in.contiguous();
  const int64_t n = ids.numel(), v = w.out_features();
  const int32_t* id = ids.data<int32_t>();
  for (int64_t i = 0; i < n; ++i)
    TFM_CHECK(id[i] >= 0 && id[i] < v)
        << "embedding: id " << id[i] << " at flat position " << i << " of ids " << ids.describe()
        << " is outside [0, V) for V = " << v;
  Shape out_shape = ids.shape();
  out_shape.push_back(w.in_features());
  Tensor out = Tensor::empty(out_shape);
  cpu::packed_weight_rows(n, id, w.packed(), out.data<float>());
  return out;
}

}  // namespace tfm
