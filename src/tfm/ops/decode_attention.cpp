#include "tfm/ops/decode_attention.h"

#include <cmath>

#include "tfm/core/check.h"
#include "tfm/core/profile.h"
#include "tfm/ops/cpu/decode_attention_cpu.h"
#include "tfm/ops/dispatch.h"
#include "tfm/ops/host.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/decode_attention.h"
#endif

namespace tfm {

namespace {

constexpr const char* kOp = "decode_attention";

// Keys/values read in place: f32 (B, S, C) on q's device whose batch rows are each contiguous.
Tensor rows_readable(const Tensor& t, const char* name, Device device) {
  TFM_CHECK(t.defined() && t.dim() == 3 && t.dtype() == DType::f32 && t.device() == device)
      << kOp << ": " << name << " must be an f32 tensor (B, S, C) on " << device_name(device)
      << ", got " << (t.defined() ? t.describe() : std::string("an undefined tensor"))
      << (t.defined() ? std::string(" on ") + device_name(t.device()) : std::string());
  const bool in_place =
      t.strides()[2] == 1 && t.strides()[1] == t.size(2) && t.strides()[0] >= t.size(1) * t.size(2);
  return in_place ? t : t.contiguous();
}

}  // namespace

Tensor decode_attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, int64_t heads,
                        const Tensor& key_padding_mask, double scale, Tensor* weights,
                        const Tensor& kv_rows_in, const Tensor& kv_slots_in) {
  profile::Scope scope(profile::Phase::attention);
  TFM_CHECK(q_in.defined() && q_in.dim() == 3 && q_in.size(1) == 1 && q_in.dtype() == DType::f32)
      << kOp << ": q must be an f32 tensor (B, 1, C), got "
      << (q_in.defined() ? q_in.describe() : std::string("an undefined tensor"));
  const Device device = q_in.device();
  if (device != Device::cuda) check_on_cpu(q_in, kOp, "q");
  const Tensor q = q_in.contiguous();
  const Tensor k = rows_readable(k_in, "k", device), v = rows_readable(v_in, "v", device);
  const int64_t B = q.size(0), C = q.size(2), S = k.size(1), Bk = k.size(0);
  Tensor kv_rows;
  if (kv_rows_in.defined()) {
    TFM_CHECK(kv_rows_in.dtype() == DType::i32 && kv_rows_in.dim() == 1 &&
              kv_rows_in.size(0) == B && kv_rows_in.device() == device)
        << kOp << ": kv_rows must be i32 (" << B << ") on " << device_name(device) << ", got "
        << kv_rows_in.describe();
    kv_rows = kv_rows_in.contiguous();
    // Checked here on the CPU; a device's kernel checks them itself and reports a bad one at
    // the next copy to the host (core/cuda/device_fault.h), instead of a copy back every step.
    if (device == Device::cpu) {
      const int32_t* r = kv_rows.data<int32_t>();
      for (int64_t b = 0; b < B; ++b)
        TFM_CHECK(r[b] >= 0 && r[b] < Bk)
            << kOp << ": kv_rows[" << b << "] = " << r[b] << " outside the " << Bk << " key rows";
    }
  }
  Tensor kv_slots;
  if (kv_slots_in.defined()) {
    TFM_CHECK(kv_slots_in.dtype() == DType::i32 && kv_slots_in.dim() == 2 &&
              kv_slots_in.size(0) == B && kv_slots_in.size(1) == S &&
              kv_slots_in.device() == device && !kv_rows.defined() && !key_padding_mask.defined())
        << kOp << ": kv_slots must be i32 (" << B << ", " << S
        << "), without kv_rows or a mask, got " << kv_slots_in.describe();
    // Rows of a longer slot buffer are read in place (the KV cache's, one row per beam).
    kv_slots = kv_slots_in.strides()[1] == 1 && kv_slots_in.strides()[0] >= S
                   ? kv_slots_in
                   : kv_slots_in.contiguous();
    // Checked in place on the CPU; on a device by the kernel, as kv_rows.
    if (device == Device::cpu) {
      const int32_t* r = kv_slots.data<int32_t>();
      const int64_t ld = kv_slots.strides()[0];
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s)
          TFM_CHECK(r[b * ld + s] >= 0 && r[b * ld + s] < Bk)
              << kOp << ": kv_slots[" << b << ", " << s << "] = " << r[b * ld + s]
              << " outside the " << Bk << " key rows";
    }
  }
  TFM_CHECK((kv_rows.defined() || kv_slots.defined() || Bk == B) && v.size(0) == Bk &&
            v.size(1) == S && k.size(2) == C && v.size(2) == C && k.strides()[0] == v.strides()[0])
      << kOp << ": q " << q.describe() << ", k " << k.describe() << ", v " << v.describe()
      << " do not match as (B, 1, C), (B, S, C), (B, S, C)";
  TFM_CHECK(heads > 0 && C > 0 && C % heads == 0)
      << kOp << ": " << heads << " heads do not divide the width " << C;
  Tensor mask;
  if (key_padding_mask.defined()) {
    TFM_CHECK(key_padding_mask.dtype() == DType::u8 && key_padding_mask.dim() == 2 &&
              key_padding_mask.size(0) == Bk && key_padding_mask.size(1) == S &&
              key_padding_mask.device() == device)
        << kOp << ": key_padding_mask must be u8 (" << Bk << ", " << S << "), got "
        << key_padding_mask.describe();
    mask = key_padding_mask.contiguous();
  }
  TFM_CHECK(std::isfinite(scale)) << kOp << ": scale must be finite, got " << scale;
  const int64_t Dh = C / heads;
  Tensor out = Tensor::empty({B, 1, C}, DType::f32, device);
  cpu::DecodeAttentionArgs a;
  a.batch = B;
  a.heads = heads;
  a.kv_len = S;
  a.head_dim = Dh;
  a.q = q.data<float>();
  a.k = k.data<float>();
  a.v = v.data<float>();
  a.kv_batch_stride = k.strides()[0];
  a.key_rows = Bk;
  a.mask = mask.defined() ? mask.data<uint8_t>() : nullptr;
  a.kv_rows = kv_rows.defined() ? kv_rows.data<int32_t>() : nullptr;
  a.kv_slots = kv_slots.defined() ? kv_slots.data<int32_t>() : nullptr;
  a.kv_slots_ld = kv_slots.defined() ? kv_slots.strides()[0] : 0;
  a.scale = static_cast<float>(scale != 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(Dh)));
  a.out = out.data<float>();
  if (weights) {
    *weights = Tensor::empty({B, heads, 1, S}, DType::f32, device);
    a.probs = weights->data<float>();
  }
#ifdef TFM_WITH_CUDA
  if (device == Device::cuda) {
    cuda::decode_attention_forward(a);
    return out;
  }
#endif
  cpu::decode_attention_forward(a);
  return out;
}

}  // namespace tfm
