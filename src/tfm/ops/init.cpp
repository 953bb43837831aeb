#include "tfm/ops/init.h"

#include <cmath>

#include "tfm/core/parallel.h"
#include "tfm/ops/dispatch.h"

namespace tfm {

namespace {

constexpr int64_t kGrain = 1 << 12;  // elements per task: each costs a Philox block or two

void check_target(const Tensor& t, const char* op) {
  TFM_CHECK(t.defined()) << op << ": tensor is undefined";
  TFM_CHECK(t.dtype() == DType::f32 || (t.dtype() == DType::f64 && t.device() == Device::cpu))
      << op << ": tensor must be f32 or f64, got " << t.describe()
      << (t.device() == Device::cpu ? "" : " on a device, where only f32 is");
}

// Sets element i of t (row-major) to value(i), in parallel; strided tensors go through a
// contiguous buffer so the element numbering is the logical one. A device tensor is drawn on the
// host and copied over once: the same bits as on the CPU, and initialisation is not a hot path.
template <typename F>
void fill_elementwise(Tensor& t, const char* op, F&& value) {
  Tensor dst = t.is_contiguous() && t.device() == Device::cpu
                   ? t
                   : Tensor::empty(t.shape(), t.dtype(), Device::cpu);
  dispatch_floating(t.dtype(), op, [&](auto z) {
    using T = decltype(z);
    T* p = dst.data<T>();
    parallel_for(dst.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = static_cast<T>(value(static_cast<uint64_t>(i)));
    });
  });
  if (!same_view(dst, t)) t.copy_(dst);
}

}  // namespace

void uniform_(Tensor& t, double lo, double hi, Generator& gen) {
  check_target(t, "uniform_");
  TFM_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo <= hi)
      << "uniform_: need finite lo <= hi, got [" << lo << ", " << hi << ") for " << t.describe();
  if (!gen.fills()) return;
  const RandomStream stream = gen.next_stream();
  const double width = hi - lo;
  fill_elementwise(t, "uniform_", [&](uint64_t i) { return lo + width * stream.uniform_f64(i); });
}

void normal_(Tensor& t, double mean, double std, Generator& gen) {
  check_target(t, "normal_");
  TFM_CHECK(std::isfinite(mean) && std::isfinite(std) && std >= 0)
      << "normal_: need finite mean and std >= 0, got mean " << mean << ", std " << std << " for "
      << t.describe();
  if (!gen.fills()) return;
  const RandomStream stream = gen.next_stream();
  fill_elementwise(t, "normal_", [&](uint64_t i) { return mean + std * stream.normal(i); });
}

void xavier_uniform_(Tensor& t, Generator& gen, double gain) {
  check_target(t, "xavier_uniform_");
  TFM_CHECK(t.dim() >= 2) << "xavier_uniform_: tensor needs at least 2 axes (fan_out, fan_in), got "
                          << t.describe();
  TFM_CHECK(std::isfinite(gain) && gain >= 0)
      << "xavier_uniform_: gain must be finite and >= 0, got " << gain;
  if (!gen.fills()) return;
  if (t.numel() == 0) {
    gen.next_stream();  // still one stream, so later draws do not shift with the shapes
    return;
  }
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  const double fan_in = static_cast<double>(t.size(1) * receptive);
  const double fan_out = static_cast<double>(t.size(0) * receptive);
  const double bound = gain * std::sqrt(6.0 / (fan_in + fan_out));
  uniform_(t, -bound, bound, gen);
}

}  // namespace tfm
