#include <cmath>

#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/elementwise.h"
#include "tfm/ops/reduce.h"

namespace tfm {
namespace {

using testing::bitwise_equal;
using testing::gradcheck;
using testing::random_tensor;

using testing::with_threads;

long double reference_sum(const Tensor& x) {
  long double s = 0;
  for (double v : x.to(DType::f64).to_vector<double>()) s += v;
  return s;
}

TEST(Reduce, SumAndMeanMatchAReferenceSum) {
  for (int64_t n : {1, 2, 15, 16, 17, 1000, 16384, 16385, 100003}) {
    for (DType dt : {DType::f32, DType::f64}) {
      Tensor x = random_tensor({n}, dt, n);
      const long double ref = reference_sum(x);
      Tensor s = sum(x), m = mean(x);
      EXPECT_EQ(s.shape(), Shape{});
      EXPECT_EQ(m.shape(), Shape{});
      EXPECT_EQ(s.dtype(), dt);
      // Double accumulation: off the exact sum by a few ulps of double at most, then rounded.
      const double tol = dt == DType::f32 ? 1e-7 * std::abs(double(ref)) + 1e-7 : 1e-15 * n;
      EXPECT_NEAR(s.item(), double(ref), tol) << "n " << n;
      EXPECT_NEAR(m.item(), double(ref / n), tol / n + 1e-15) << "n " << n;
      // mean = sum / n (exactly for f64: both divide the same double total).
      if (dt == DType::f64)
        EXPECT_EQ(m.item(), s.item() / n);
      else
        EXPECT_NEAR(m.item(), s.item() / n, 1e-7 * std::abs(s.item() / n));
    }
  }
}

TEST(Reduce, F32AccumulatesInDouble) {
  // In f32, 1e8 + 1 == 1e8: a float accumulator would return 0 here.
  std::vector<float> v(1002, 1.0f);
  v.front() = 1e8f;
  v.back() = -1e8f;
  Tensor x = Tensor::from_vector<float>({1002}, v);
  EXPECT_EQ(sum(x).item(), 1000.0);
  EXPECT_EQ(mean(x).item(), static_cast<double>(static_cast<float>(1000.0 / 1002)));
  EXPECT_EQ(sum_last(x.reshape({1, 1002})).at({0}), 1000.0);
}

TEST(Reduce, SumLastMatchesRowLoops) {
  for (Shape shape : {Shape{7}, Shape{2, 3, 5}, Shape{4, 1}, Shape{1, 33}, Shape{3, 0}}) {
    Tensor x = random_tensor(shape, DType::f64, 3);
    Tensor y = sum_last(x);
    const Shape out_shape(shape.begin(), shape.end() - 1);
    ASSERT_EQ(y.shape(), out_shape);
    const int64_t cols = shape.back(), rows = shape_numel(out_shape);
    const auto xv = x.to_vector<double>();
    const auto yv = y.to_vector<double>();
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t c = 0; c < cols; ++c) s += xv[r * cols + c];
      EXPECT_NEAR(yv[r], s, 1e-14) << "row " << r << " of " << shape_str(shape);
    }
  }
  // Non-contiguous input is read in logical order.
  Tensor x = random_tensor({3, 4}, DType::f64, 8);
  EXPECT_TRUE(testing::all_close(sum_last(x.transpose(0, 1)),
                                 sum_last(x.transpose(0, 1).contiguous()), 0, 0));
}

TEST(Reduce, EmptyInputs) {
  EXPECT_EQ(sum(Tensor::zeros({0})).item(), 0.0);
  EXPECT_EQ(sum(Tensor::zeros({3, 0}, DType::f64)).item(), 0.0);
  EXPECT_EQ(sum_last(Tensor::zeros({0, 4})).shape(), (Shape{0}));
}

TEST(Reduce, Gradients) {
  for (Shape shape : {Shape{}, Shape{1}, Shape{7}, Shape{3, 1, 5}, Shape{2, 9}}) {
    Tensor x = random_tensor(shape, DType::f64, 5).set_requires_grad(true);
    EXPECT_TRUE(gradcheck([](auto& in) { return sum(in[0]); }, {x})) << shape_str(shape);
    EXPECT_TRUE(gradcheck([](auto& in) { return mean(in[0]); }, {x})) << shape_str(shape);
    if (!shape.empty()) {
      EXPECT_TRUE(gradcheck([](auto& in) { return sum_last(in[0]); }, {x})) << shape_str(shape);
    }
    // Composed: the reductions' gradients flow through other ops.
    EXPECT_TRUE(gradcheck([](auto& in) { return mean(mul(in[0], in[0])); }, {x}));
  }
}

TEST(Reduce, BackwardValues) {
  Tensor x = random_tensor({3, 4}, DType::f32, 6).set_requires_grad(true);
  autograd::backward(sum(x));
  EXPECT_TRUE(bitwise_equal(x.grad(), Tensor::ones({3, 4})));
  x.zero_grad();
  autograd::backward(mean(x));
  EXPECT_TRUE(bitwise_equal(x.grad(), Tensor::full({3, 4}, 1.0 / 12)));
  x.zero_grad();
  // sum_last's gradient repeats each row's incoming gradient along the row.
  Tensor g = Tensor::from_vector<float>({3}, {1.5f, -2.0f, 0.25f});
  autograd::backward(sum_last(x), g);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(x.grad().at({r, c}), g.at({r}));
}

TEST(Reduce, SameBitsForAnyThreadCountAndAlignment) {
  // Several sum chunks (and many rows) so two threads really split the work.
  Tensor big = random_tensor({300001}, DType::f32, 11, -10, 10);
  Tensor x = big.slice(1, 300001);  // same values, shifted 4 bytes: alignment must not matter
  Tensor xc = x.clone();
  for (auto op : {&sum, &mean}) {
    Tensor one = with_threads(1, [&] { return op(xc); });
    Tensor two = with_threads(2, [&] { return op(xc); });
    EXPECT_TRUE(bitwise_equal(one, two));
    EXPECT_TRUE(bitwise_equal(one, op(x)));
  }
  Tensor rows = xc.reshape({-1, 100});
  EXPECT_TRUE(bitwise_equal(with_threads(1, [&] { return sum_last(rows); }),
                            with_threads(2, [&] { return sum_last(rows); })));
  Tensor xd = random_tensor({100003}, DType::f64, 12);
  EXPECT_TRUE(bitwise_equal(with_threads(1, [&] { return sum(xd); }),
                            with_threads(2, [&] { return sum(xd); })));
  // The backward kernels too.
  auto grad_of = [&](int threads) {
    return with_threads(threads, [&] {
      Tensor p = rows.clone().set_requires_grad(true);
      autograd::backward(sum_last(p), random_tensor({3000}, DType::f32, 13));
      return p.grad();
    });
  };
  EXPECT_TRUE(bitwise_equal(grad_of(1), grad_of(2)));
}

TEST(Reduce, Errors) {
  EXPECT_TFM_ERROR(sum(Tensor::zeros({2}, DType::i32)), "sum: x must be f32 or f64, got i32 (2)");
  EXPECT_TFM_ERROR(mean(Tensor::zeros({0, 3})), "mean: x is empty, f32 (0, 3)");
  EXPECT_TFM_ERROR(sum_last(Tensor::zeros({})), "sum_last: x needs at least one axis, got f32 ()");
  EXPECT_TFM_ERROR(mean(Tensor()), "mean: x is undefined");
}

}  // namespace
}  // namespace tfm
