#include "test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/rng.h"

namespace tfm::testing {

float round_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
  float r;
  std::memcpy(&r, &bits, 4);
  return r;
}

double activate(double z, Activation act) {
  if (act == Activation::relu) return z > 0 ? z : 0;
  if (act == Activation::gelu) return 0.5 * z * std::erfc(-z / std::sqrt(2.0));
  if (act == Activation::silu) return z / (1.0 + std::exp(-z));
  if (act == Activation::gelu_tanh)
    return 0.5 * z * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (z + 0.044715 * z * z * z)));
  return z;
}

Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, double lo, double hi) {
  RandomStream rs(seed, 0x7e57);
  std::vector<double> v(shape_numel(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = lo + (hi - lo) * rs.uniform_f64(i);
  return Tensor::from_vector<double>(shape, v).to(dtype);
}

Tensor random_ids(const Shape& shape, int64_t n, uint64_t seed) {
  RandomStream rs(seed, 0x1d5);
  std::vector<int32_t> v(shape_numel(shape));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<int32_t>(std::min<int64_t>(n - 1, rs.uniform_f64(i) * n));
  return Tensor::from_vector<int32_t>(shape, v);
}

namespace {
std::vector<double> values(const Tensor& t) {
  return t.to(DType::f64).to_vector<double>();
}
}  // namespace

double max_abs_diff(const Tensor& a, const Tensor& b) {
  auto va = values(a), vb = values(b);
  double worst = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    const double d = std::abs(va[i] - vb[i]);
    if (std::isnan(d)) return INFINITY;
    worst = std::max(worst, d);
  }
  return worst;
}

double scaled_error(const Tensor& a, const Tensor& b) {
  TFM_CHECK(a.shape() == b.shape()) << "scaled_error: " << a.describe() << " vs " << b.describe();
  auto va = values(a), vb = values(b);
  double diff = 0, scale = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    const double d = std::abs(va[i] - vb[i]);
    if (std::isnan(d)) return INFINITY;
    diff = std::max(diff, d);
    scale = std::max(scale, std::abs(vb[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

::testing::AssertionResult all_close(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.shape() != b.shape())
    return ::testing::AssertionFailure()
           << "shapes differ: " << a.describe() << " vs " << b.describe();
  auto va = values(a), vb = values(b);
  for (size_t i = 0; i < va.size(); ++i) {
    if (va[i] == vb[i]) continue;  // equal infinities are close; their difference is NaN
    const double d = std::abs(va[i] - vb[i]);
    if (!(d <= atol + rtol * std::abs(vb[i])))
      return ::testing::AssertionFailure()
             << "element " << i << " of " << a.describe() << ": " << va[i] << " vs " << vb[i]
             << " (|diff| " << d << ", max allowed " << atol + rtol * std::abs(vb[i]) << ")";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    return ::testing::AssertionFailure() << a.describe() << " vs " << b.describe();
  Tensor ca = a.contiguous(), cb = b.contiguous();
  const auto* pa = static_cast<const unsigned char*>(ca.raw_data());
  const auto* pb = static_cast<const unsigned char*>(cb.raw_data());
  for (size_t i = 0; i < ca.nbytes(); ++i)
    if (pa[i] != pb[i])
      return ::testing::AssertionFailure()
             << "byte " << i << " differs (element " << i / dtype_size(a.dtype()) << ")";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult gradcheck(const Fn& f, std::vector<Tensor> inputs,
                                     GradcheckOptions opt) {
  for (auto& t : inputs)
    if (t.defined() && is_floating(t.dtype()) && t.dtype() != DType::f64)
      return ::testing::AssertionFailure() << "gradcheck needs f64 inputs, got " << t.describe();
  // Analytic.
  for (auto& t : inputs)
    if (t.requires_grad()) t.zero_grad();
  Tensor out = f(inputs);
  if (!out.requires_grad()) return ::testing::AssertionFailure() << "output does not require grad";
  Tensor w = random_tensor(out.shape(), DType::f64, opt.seed, 0.5, 1.5);
  // Alternate signs so errors cannot cancel against a uniform weighting.
  {
    double* p = w.data<double>();
    for (int64_t i = 0; i < w.numel(); i += 2) p[i] = -p[i];
  }
  const std::vector<double> wv = w.to_vector<double>();
  autograd::backward(out, w);

  auto objective = [&](const std::vector<Tensor>& in) {
    NoGradGuard ng;
    std::vector<double> o = f(in).to(DType::f64).to_vector<double>();
    double s = 0;
    for (size_t i = 0; i < o.size(); ++i) s += o[i] * wv[i];
    return s;
  };

  std::ostringstream report;
  bool ok = true;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor& x = inputs[k];
    if (!x.defined() || !x.requires_grad()) continue;
    Tensor g = x.grad();
    if (!g.defined()) {
      g = Tensor::zeros(x.shape(), DType::f64);
    }
    const std::vector<double> gv = g.to(DType::f64).to_vector<double>();
    double* px = x.data<double>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double orig = px[i];
      px[i] = orig + opt.eps;
      const double fp = objective(inputs);
      px[i] = orig - opt.eps;
      const double fm = objective(inputs);
      px[i] = orig;
      const double num = (fp - fm) / (2 * opt.eps);
      const double err = std::abs(num - gv[i]);
      if (!(err <= opt.atol + opt.rtol * std::abs(num))) {
        if (ok) report << "gradient mismatch:";
        ok = false;
        report << "\n  input " << k << " " << x.describe() << " element " << i << ": analytic "
               << gv[i] << ", numeric " << num << " (|diff| " << err << ")";
        if (report.tellp() > 2000) break;
      }
    }
  }
  autograd::clear_tape();
  if (!ok) return ::testing::AssertionFailure() << report.str();
  return ::testing::AssertionSuccess();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace tfm::testing
