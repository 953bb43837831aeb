#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/ops/elementwise.h"

namespace tfm {
namespace {

using testing::gradcheck;
using testing::random_tensor;

TEST(Elementwise, ForwardMatchesScalarMath) {
  Tensor a = random_tensor({3, 5}, DType::f32, 1);
  Tensor b = random_tensor({3, 5}, DType::f32, 2);
  Tensor s = add(a, b), d = sub(a, b), m = mul(a, b), k = scale(a, -2.5);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      const float x = static_cast<float>(a.at({i, j})), y = static_cast<float>(b.at({i, j}));
      EXPECT_EQ(s.at({i, j}), x + y);
      EXPECT_EQ(d.at({i, j}), x - y);
      EXPECT_EQ(m.at({i, j}), x * y);
      EXPECT_EQ(k.at({i, j}), -2.5f * x);
    }
}

TEST(Elementwise, Gradients) {
  for (Shape shape : {Shape{1}, Shape{7}, Shape{3, 1, 5}}) {
    Tensor a = random_tensor(shape, DType::f64, 3).set_requires_grad(true);
    Tensor b = random_tensor(shape, DType::f64, 4).set_requires_grad(true);
    EXPECT_TRUE(gradcheck([](auto& in) { return add(in[0], in[1]); }, {a, b}));
    EXPECT_TRUE(gradcheck([](auto& in) { return sub(in[0], in[1]); }, {a, b}));
    EXPECT_TRUE(gradcheck([](auto& in) { return mul(in[0], in[1]); }, {a, b}));
    EXPECT_TRUE(gradcheck([](auto& in) { return scale(in[0], 0.3); }, {a}));
    // A tensor used twice gets both contributions: d(a*a)/da = 2a.
    EXPECT_TRUE(gradcheck([](auto& in) { return mul(add(in[0], in[1]), in[0]); }, {a, b}));
  }
}

TEST(Elementwise, GradientAccumulatesAcrossBackwardCalls) {
  Tensor a = random_tensor({4}, DType::f64, 5).set_requires_grad(true);
  Tensor w = random_tensor({4}, DType::f64, 6);
  autograd::backward(mul(a, a), w);
  Tensor g1 = a.grad().clone();
  autograd::backward(mul(a, a), w);
  EXPECT_TRUE(testing::all_close(a.grad(), scale(g1, 2.0), 1e-15, 0));
  // Expected value: 2 * (2 a w).
  EXPECT_TRUE(testing::all_close(a.grad(), scale(mul(a.detach(), w), 4.0), 1e-15, 0));
}

TEST(Elementwise, ErrorsNameTheOpAndShapes) {
  Tensor a = Tensor::zeros({2, 3});
  Tensor b = Tensor::zeros({3, 2});
  EXPECT_TFM_ERROR(add(a, b), "add: shapes differ, f32 (2, 3) vs f32 (3, 2)");
  EXPECT_TFM_ERROR(mul(a, Tensor::zeros({2, 3}, DType::f64)), "mul: dtypes differ");
  EXPECT_TFM_ERROR(scale(Tensor::zeros({2}, DType::i32), 1.0), "scale: a must be f32 or f64");
  EXPECT_TFM_ERROR(add(a, Tensor()), "add: b is undefined");
}

}  // namespace
}  // namespace tfm
