#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/softmax_cpu.h"
#include "tfm/ops/elementwise.h"
#include "tfm/ops/softmax.h"

namespace tfm {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::gradcheck;
using testing::random_tensor;

// softmax (or its log) over the last axis by the textbook formula, in long double.
Tensor reference_softmax(const Tensor& x, bool log) {
  const int64_t c = x.size(-1), n = x.numel() / c;
  const std::vector<double> xv = x.to(DType::f64).to_vector<double>();
  std::vector<double> y(xv.size());
  for (int64_t i = 0; i < n; ++i) {
    long double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < c; ++j) m = std::max<long double>(m, xv[i * c + j]);
    for (int64_t j = 0; j < c; ++j) s += std::exp(xv[i * c + j] - m);
    for (int64_t j = 0; j < c; ++j)
      y[i * c + j] = static_cast<double>(log ? (xv[i * c + j] - m) - std::log(s)
                                             : std::exp(xv[i * c + j] - m) / s);
  }
  return Tensor::from_vector<double>(x.shape(), y);
}

TEST(Softmax, ForwardMatchesDefinition) {
  for (Shape shape : {Shape{3, 7}, Shape{1, 1}, Shape{2, 3, 33}, Shape{5}, Shape{4, 8000}}) {
    Tensor x = random_tensor(shape, DType::f64, 1, -6.0, 6.0);
    EXPECT_TRUE(all_close(softmax(x), reference_softmax(x, false), 1e-13, 1e-15));
    EXPECT_TRUE(all_close(log_softmax(x), reference_softmax(x, true), 1e-13, 1e-13));
    // f32 against the f64 truth of the same inputs (exp and the row sums must be accurate).
    Tensor x32 = x.to(DType::f32);
    Tensor s32 = softmax(x32), l32 = log_softmax(x32);
    EXPECT_EQ(s32.dtype(), DType::f32);
    EXPECT_EQ(l32.shape(), shape);
    EXPECT_TRUE(all_close(s32, reference_softmax(x32, false), 1e-6, 1e-12)) << shape_str(shape);
    EXPECT_TRUE(all_close(l32, reference_softmax(x32, true), 1e-6, 1e-6)) << shape_str(shape);
  }
}

TEST(Softmax, RowsSumToOne) {
  Tensor y = softmax(random_tensor({4, 1000}, DType::f32, 2, -10, 10));
  for (int64_t i = 0; i < 4; ++i) {
    double s = 0;
    for (int64_t j = 0; j < 1000; ++j) s += y.at({i, j});
    EXPECT_NEAR(s, 1.0, 1e-6);
  }
}

// A strided view is normalised along its own last axis.
TEST(Softmax, NonContiguousInput) {
  Tensor xt = random_tensor({7, 5}, DType::f64, 6, -3, 3).transpose(0, 1);  // (5, 7)
  ASSERT_FALSE(xt.is_contiguous());
  EXPECT_TRUE(all_close(softmax(xt), reference_softmax(xt.contiguous(), false), 1e-13, 1e-15));
  EXPECT_TRUE(all_close(log_softmax(xt), reference_softmax(xt.contiguous(), true), 1e-13, 1e-13));
}

TEST(Softmax, LargeLogitsStayFiniteAndExact) {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor x =
        Tensor::from_vector<double>({2, 3}, {1e4, -1e4, 1e4 - 1, -1e4, -1e4 + 2, 1e4}).to(dt);
    Tensor s = softmax(x), l = log_softmax(x);
    const double z = 1 + std::exp(-1.0);
    const double tol = dt == DType::f32 ? 1e-6 : 1e-14;
    EXPECT_NEAR(s.at({0, 0}), 1 / z, tol);
    EXPECT_EQ(s.at({0, 1}), 0.0);
    EXPECT_NEAR(s.at({0, 2}), std::exp(-1.0) / z, tol);
    EXPECT_NEAR(s.at({1, 2}), 1.0, tol);
    // The log stays accurate (a naive x - lse in f32 would be off by ~1e-3 at |x| = 1e4).
    EXPECT_NEAR(l.at({0, 0}), -std::log(z), tol);
    EXPECT_NEAR(l.at({0, 2}), -1 - std::log(z), tol);
    EXPECT_NEAR(l.at({0, 1}), -2e4 - std::log(z), dt == DType::f32 ? 2e-3 : 1e-9);
    for (Tensor t : {s, l})
      for (double v : t.to(DType::f64).to_vector<double>()) EXPECT_TRUE(std::isfinite(v));
  }
}

TEST(Softmax, MaskedEntries) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = Tensor::from_vector<double>({1, 3}, {0.5, -inf, 1.5}).set_requires_grad(true);
  Tensor y = softmax(x);
  EXPECT_EQ(y.at({0, 1}), 0.0);
  EXPECT_NEAR(y.at({0, 2}), 1 / (1 + std::exp(-1.0)), 1e-15);
  autograd::backward(y, Tensor::from_vector<double>({1, 3}, {1.0, 2.0, 3.0}));
  for (double v : x.grad().to_vector<double>()) EXPECT_TRUE(std::isfinite(v));
  EXPECT_EQ(x.grad().at({0, 1}), 0.0);
  Tensor y32 = softmax(x.detach().to(DType::f32));
  EXPECT_EQ(y32.at({0, 1}), 0.0);
}

TEST(Softmax, Gradients) {
  for (Shape shape : {Shape{1, 1}, Shape{3, 2}, Shape{4, 7}, Shape{2, 3, 33}, Shape{9}}) {
    Tensor x = random_tensor(shape, DType::f64, 3, -3, 3).set_requires_grad(true);
    EXPECT_TRUE(gradcheck([](auto& in) { return softmax(in[0]); }, {x})) << shape_str(shape);
    EXPECT_TRUE(gradcheck([](auto& in) { return log_softmax(in[0]); }, {x})) << shape_str(shape);
    // Composition: the input used twice.
    EXPECT_TRUE(gradcheck([](auto& in) { return mul(softmax(in[0]), log_softmax(in[0])); }, {x}))
        << shape_str(shape);
  }
}

// The f32 exp against libm's over the range the kernels use, and its edge cases.
TEST(Softmax, SimdExpIsAccurate) {
  double worst = 0;
  for (int k = 0; k <= 200000; ++k) {
    const float x = -87.0f + 97.0f * static_cast<float>(k) / 200000.0f;  // [-87, 10]
    const double want = std::exp(static_cast<double>(x));
    const double got = cpu::simd_exp(x);
    if (x >= -86.0f) worst = std::max(worst, std::abs(got - want) / want);
  }
  EXPECT_LT(worst, 1.5e-7);  // 2.5 ulp; measured 1.4
  EXPECT_EQ(cpu::simd_exp(0.0f), 1.0f);
  EXPECT_EQ(cpu::simd_exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(cpu::simd_exp(-100.0f), 0.0f);
  EXPECT_EQ(cpu::simd_exp(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_NEAR(cpu::simd_exp(88.5f) / std::exp(88.5), 1.0, 3e-7);
  EXPECT_TRUE(std::isnan(cpu::simd_exp(std::numeric_limits<float>::quiet_NaN())));
}

// exp_shifted_sum_f64's sum (log-softmax's normaliser, so every search step's scores) in the order
// it documents, bit for bit: eight lanes, each adding its own terms in order in double;
// t_i = lane i + lane i + 4; the tail's terms (past the last 8) added one by one, plus
// ((t0 + t1) + (t2 + t3)). The terms are the exps it stores (Store = true), summed here in that
// order. Inputs span [-60, 6], so the
// terms span 2^-95 … 1 and a double sum of them is not exact: one chain, or lanes paired i with
// i + 1 instead of i + 4, differs in the last bits on some of these 56 rows (checked).
TEST(Softmax, ExpShiftedSumAddsEachLaneInItsDocumentedOrder) {
  for (int64_t n : {1, 7, 8, 9, 100, 8000, 8003})
    for (uint64_t seed = 0; seed < 8; ++seed) {
      const Tensor x =
          random_tensor({n}, DType::f32, 700 + 10 * static_cast<uint64_t>(n) + seed, -60.0, 6.0);
      const float* xp = x.data<float>();
      const float m = *std::max_element(xp, xp + n);
      std::vector<float> e(static_cast<size_t>(n));
      const double got = cpu::exp_shifted_sum_f64<true>(xp, n, m, e.data());
      double lane[8] = {}, tail = 0;
      const int64_t body = n / 8 * 8;
      for (int64_t j = 0; j < body; ++j) lane[j % 8] += static_cast<double>(e[j]);
      for (int64_t j = body; j < n; ++j) tail += static_cast<double>(e[j]);
      double t[4];
      for (int i = 0; i < 4; ++i) t[i] = lane[i] + lane[i + 4];
      const double want = tail + ((t[0] + t[1]) + (t[2] + t[3]));
      EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << "n=" << n << " seed " << seed;
      EXPECT_EQ(cpu::exp_shifted_sum_f64<false>(xp, n, m), got) << "n=" << n;
      for (int64_t j = 0; j < n; ++j)
        ASSERT_NEAR(e[j], std::exp(static_cast<double>(xp[j]) - m), 3e-7)
            << "n=" << n << " j=" << j;
    }
}

TEST(Softmax, Errors) {
  EXPECT_TFM_ERROR(softmax(Tensor::zeros({2, 3}, DType::i32)), "softmax: x must be f32 or f64");
  EXPECT_TFM_ERROR(log_softmax(Tensor::zeros({})), "log_softmax: x must have at least one axis");
  EXPECT_TFM_ERROR(softmax(Tensor::zeros({2, 0})), "softmax: the last axis is empty");
  EXPECT_TFM_ERROR(softmax(Tensor()), "softmax: x is undefined");
}

TEST(Softmax, ThreadCountDoesNotChangeBits) {
  Tensor x = random_tensor({300, 515}, DType::f32, 4, -8, 8);
  Tensor dy = random_tensor({300, 515}, DType::f32, 5);
  auto run = [&](int threads) {
    set_threads(threads);
    std::vector<Tensor> out;
    for (bool log : {false, true}) {
      Tensor xx = x.clone().set_requires_grad(true);
      Tensor y = log ? log_softmax(xx) : softmax(xx);
      autograd::backward(y, dy);
      out.push_back(y);
      out.push_back(xx.grad());
    }
    return out;
  };
  const int before = get_threads();
  std::vector<Tensor> one = run(1), two = run(2);
  set_threads(before);
  for (size_t k = 0; k < one.size(); ++k) EXPECT_TRUE(bitwise_equal(one[k], two[k])) << k;
}

}  // namespace
}  // namespace tfm
