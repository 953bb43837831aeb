#include <cmath>
#include <limits>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/activation.h"
#include "tfm/ops/elementwise.h"

namespace tfm {
namespace {

using testing::gradcheck;
using testing::random_tensor;

double gelu_exact(double x) {
  return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}
double gelu_grad_exact(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
}

// Evenly spaced points over [lo, hi], the ends included.
Tensor linspace(double lo, double hi, int64_t n, DType dtype) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * static_cast<double>(i) / (n - 1);
  return Tensor::from_vector<double>({n}, v).to(dtype);
}

TEST(Relu, ForwardIsMaxWithZeroAndKeepsNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({6}, {-2.5f, -0.0f, 0.0f, 1e-30f, 3.0f, nan});
  std::vector<float> y = relu(x).to_vector<float>();
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 1e-30f);
  EXPECT_EQ(y[4], 3.0f);
  EXPECT_TRUE(std::isnan(y[5]));
}

TEST(Relu, GradientIsZeroAtAndBelowZero) {
  Tensor x = Tensor::from_vector<double>({4}, {-1.0, 0.0, 0.5, 2.0}).set_requires_grad(true);
  autograd::backward(relu(x), Tensor::from_vector<double>({4}, {10, 20, 30, 40}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 30, 40}));
}

TEST(Relu, Gradcheck) {
  for (Shape shape : {Shape{1}, Shape{17}, Shape{3, 1, 5}}) {
    // Keep every value at least 0.05 from the kink, where central differences are meaningless.
    Tensor x = random_tensor(shape, DType::f64, 11, 0.05, 1.0);
    double* p = x.data<double>();
    for (int64_t i = 0; i < x.numel(); i += 2) p[i] = -p[i];
    x.set_requires_grad(true);
    EXPECT_TRUE(gradcheck([](auto& in) { return relu(in[0]); }, {x}));
    // Composed with another op, so the incoming gradient is not the seed itself.
    EXPECT_TRUE(gradcheck([](auto& in) { return mul(relu(in[0]), in[0]); }, {x}));
  }
}

TEST(Gelu, F64MatchesErfFormula) {
  Tensor x = linspace(-12.0, 12.0, 2001, DType::f64);
  std::vector<double> xv = x.to_vector<double>(), y = gelu(x).to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i)
    ASSERT_NEAR(y[i], gelu_exact(xv[i]), 1e-15 * std::max(1.0, std::abs(xv[i]))) << xv[i];
  EXPECT_EQ(y[1000], 0.0);  // x = 0
}

TEST(Gelu, F32WithinItsErfApproximationOfExact) {
  // Φ is approximated to 7.5e-8 absolute; around that, f32 rounding of x and of the product.
  Tensor x = linspace(-12.0, 12.0, 4801, DType::f32);
  std::vector<float> xv = x.to_vector<float>(), y = gelu(x).to_vector<float>();
  double worst = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    const double err = std::abs(y[i] - gelu_exact(xv[i])) / std::max(1.0, std::abs(double(xv[i])));
    worst = std::max(worst, err);
  }
  EXPECT_LT(worst, 2.5e-7);
  // Far out the function is the identity or zero.
  EXPECT_EQ(gelu(Tensor::from_vector<float>({2}, {-30.0f, 30.0f})).to_vector<float>(),
            (std::vector<float>{-0.0f, 30.0f}));
}

TEST(Gelu, F32GradientWithinToleranceOfExact) {
  Tensor x = linspace(-9.0, 9.0, 1801, DType::f32).set_requires_grad(true);
  autograd::backward(gelu(x), Tensor::ones({1801}));
  std::vector<float> xv = x.detach().to_vector<float>(), g = x.grad().to_vector<float>();
  for (size_t i = 0; i < xv.size(); ++i)
    ASSERT_NEAR(g[i], gelu_grad_exact(xv[i]), 3e-7 * std::max(1.0, std::abs(double(xv[i]))))
        << "x = " << xv[i];
}

TEST(Gelu, Gradcheck) {
  for (Shape shape : {Shape{1}, Shape{33}, Shape{2, 1, 7}}) {
    Tensor x = random_tensor(shape, DType::f64, 12, -4.0, 4.0).set_requires_grad(true);
    EXPECT_TRUE(gradcheck([](auto& in) { return gelu(in[0]); }, {x}));
    EXPECT_TRUE(gradcheck([](auto& in) { return gelu(mul(in[0], in[0])); }, {x}));
  }
}

TEST(Activation, NonContiguousInputIsReadInLogicalOrder) {
  Tensor x = random_tensor({3, 4}, DType::f64, 13, -2, 2);
  Tensor xt = x.transpose(0, 1);  // (4, 3) strided view
  EXPECT_TRUE(testing::bitwise_equal(relu(xt), relu(xt.contiguous())));
  EXPECT_TRUE(testing::bitwise_equal(gelu(xt), gelu(xt.contiguous())));
}

TEST(Activation, SameResultOnOneAndTwoThreads) {
  // Pointwise maths: the thread split cannot change any element, f32 or its gradient.
  Tensor x = random_tensor({257, 300}, DType::f32, 14, -5, 5);
  Tensor gy = random_tensor({257, 300}, DType::f32, 15);
  const int saved = get_threads();
  Tensor out[2][3];
  for (int t : {1, 2}) {
    set_threads(t);
    Tensor xr = x.clone().set_requires_grad(true);
    autograd::backward(gelu(xr), gy);
    out[t - 1][0] = gelu(x);
    out[t - 1][1] = relu(x);
    out[t - 1][2] = xr.grad();
  }
  set_threads(saved);
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(testing::bitwise_equal(out[0][k], out[1][k])) << k;
}

TEST(Activation, NoGradModeRecordsNothing) {
  Tensor x = random_tensor({4}, DType::f64, 16).set_requires_grad(true);
  NoGradGuard no_grad;
  Tensor y = gelu(relu(x));
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(autograd::tape_size(), 0u);
}

TEST(Activation, Errors) {
  EXPECT_TFM_ERROR(relu(Tensor::zeros({2}, DType::i32)), "relu: x must be f32 or f64, got i32 (2)");
  EXPECT_TFM_ERROR(gelu(testing::random_ids({3}, 5, 1)), "gelu: x must be f32 or f64");
  EXPECT_TFM_ERROR(gelu(Tensor()), "gelu: x is undefined");
  EXPECT_STREQ(activation_name(Activation::gelu), "gelu");
}

}  // namespace
}  // namespace tfm
