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

// SiLU and the tanh GELU (Marian's swish, GPT-2's gelu_new), written here from their definitions.
double silu_exact(double x) {
  return x / (1.0 + std::exp(-x));
}
double silu_grad_exact(double x) {
  const double s = 1.0 / (1.0 + std::exp(-x));
  return s + x * s * (1.0 - s);
}
double gelu_tanh_exact(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
double gelu_tanh_grad_exact(double x) {  // central difference of the definition, in double
  const double h = 1e-6;
  return (gelu_tanh_exact(x + h) - gelu_tanh_exact(x - h)) / (2 * h);
}

struct InputActivation {
  const char* name;
  Tensor (*op)(const Tensor&);
  double (*exact)(double);
  double (*grad)(double);
};
const InputActivation kInputActivations[] = {
    {"silu", silu, silu_exact, silu_grad_exact},
    {"gelu_tanh", gelu_tanh, gelu_tanh_exact, gelu_tanh_grad_exact}};

TEST(SiluAndGeluTanh, F64MatchesTheDefinition) {
  Tensor x = linspace(-30.0, 30.0, 2001, DType::f64);
  for (const auto& a : kInputActivations) {
    std::vector<double> xv = x.to_vector<double>(), y = a.op(x).to_vector<double>();
    for (size_t i = 0; i < xv.size(); ++i)
      ASSERT_NEAR(y[i], a.exact(xv[i]), 1e-14 * std::max(1.0, std::abs(xv[i])))
          << a.name << " at " << xv[i];
  }
}

TEST(SiluAndGeluTanh, F32WithinRoundingOfTheDefinition) {
  // The f32 kernels take simd_exp (2 ulp) for e^x: a few f32 ulps of the result, relative to
  // max(1, |x|) (the tanh form's 1 - 2/(e^2u + 1) loses relative accuracy where tanh is tiny,
  // not absolute).
  Tensor x = linspace(-40.0, 40.0, 8001, DType::f32);
  for (const auto& a : kInputActivations) {
    std::vector<float> xv = x.to_vector<float>(), y = a.op(x).to_vector<float>();
    double worst = 0;
    for (size_t i = 0; i < xv.size(); ++i)
      worst = std::max(worst, std::abs(y[i] - a.exact(xv[i])) /
                                  std::max(1.0, std::abs(static_cast<double>(xv[i]))));
    EXPECT_LT(worst, 5e-7) << a.name;
  }
  // Far out: the identity or zero, no NaN from an overflowing exp.
  EXPECT_EQ(silu(Tensor::from_vector<float>({2}, {-200.0f, 200.0f})).to_vector<float>(),
            (std::vector<float>{-0.0f, 200.0f}));
  EXPECT_EQ(gelu_tanh(Tensor::from_vector<float>({2}, {-200.0f, 200.0f})).to_vector<float>(),
            (std::vector<float>{-0.0f, 200.0f}));
}

TEST(SiluAndGeluTanh, F32GradientWithinToleranceOfTheDefinition) {
  for (const auto& a : kInputActivations) {
    Tensor x = linspace(-9.0, 9.0, 1801, DType::f32).set_requires_grad(true);
    autograd::backward(a.op(x), Tensor::ones({1801}));
    std::vector<float> xv = x.detach().to_vector<float>(), g = x.grad().to_vector<float>();
    for (size_t i = 0; i < xv.size(); ++i)
      ASSERT_NEAR(g[i], a.grad(xv[i]), 1e-6 * std::max(1.0, std::abs(double(xv[i]))))
          << a.name << " at " << xv[i];
  }
}

TEST(SiluAndGeluTanh, Gradcheck) {
  for (const auto& a : kInputActivations)
    for (Shape shape : {Shape{1}, Shape{33}, Shape{2, 1, 7}}) {
      Tensor x = random_tensor(shape, DType::f64, 12, -4.0, 4.0).set_requires_grad(true);
      const auto op = a.op;
      EXPECT_TRUE(gradcheck([op](auto& in) { return op(in[0]); }, {x})) << a.name;
      EXPECT_TRUE(gradcheck([op](auto& in) { return op(mul(in[0], in[0])); }, {x})) << a.name;
    }
}

TEST(Activation, NonContiguousInputIsReadInLogicalOrder) {
  Tensor x = random_tensor({3, 4}, DType::f64, 13, -2, 2);
  Tensor xt = x.transpose(0, 1);  // (4, 3) strided view
  EXPECT_TRUE(testing::bitwise_equal(relu(xt), relu(xt.contiguous())));
  EXPECT_TRUE(testing::bitwise_equal(gelu(xt), gelu(xt.contiguous())));
  EXPECT_TRUE(testing::bitwise_equal(silu(xt), silu(xt.contiguous())));
  EXPECT_TRUE(testing::bitwise_equal(gelu_tanh(xt), gelu_tanh(xt.contiguous())));
}

TEST(Activation, SameResultOnOneAndTwoThreads) {
  // Pointwise maths: the thread split cannot change any element, f32 or its gradient.
  Tensor x = random_tensor({257, 300}, DType::f32, 14, -5, 5);
  Tensor gy = random_tensor({257, 300}, DType::f32, 15);
  const int saved = get_threads();
  Tensor out[2][7];
  for (int t : {1, 2}) {
    set_threads(t);
    Tensor xr = x.clone().set_requires_grad(true), xs = x.clone().set_requires_grad(true);
    autograd::backward(gelu(xr), gy);
    autograd::backward(add(silu(xs), gelu_tanh(xs)), gy);
    out[t - 1][0] = gelu(x);
    out[t - 1][1] = relu(x);
    out[t - 1][2] = xr.grad();
    out[t - 1][3] = silu(x);
    out[t - 1][4] = gelu_tanh(x);
    out[t - 1][5] = xs.grad();
    out[t - 1][6] = gelu_tanh(x);
  }
  set_threads(saved);
  for (int k = 0; k < 7; ++k) EXPECT_TRUE(testing::bitwise_equal(out[0][k], out[1][k])) << k;
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
