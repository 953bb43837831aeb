#include <cmath>

#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/elementwise.h"
#include "tfm/ops/layer_norm.h"

namespace tfm {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::gradcheck;
using testing::random_tensor;

// layer_norm written out by hand in long double from the definition, over rows of the last axis.
Tensor reference_layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  const int64_t c = x.size(-1), n = x.numel() / c;
  const std::vector<double> xv = x.to(DType::f64).to_vector<double>();
  const std::vector<double> g = gamma.to(DType::f64).to_vector<double>();
  const std::vector<double> b = beta.to(DType::f64).to_vector<double>();
  std::vector<double> y(xv.size());
  for (int64_t i = 0; i < n; ++i) {
    long double mean = 0, var = 0;
    for (int64_t j = 0; j < c; ++j) mean += xv[i * c + j];
    mean /= c;
    for (int64_t j = 0; j < c; ++j) var += (xv[i * c + j] - mean) * (xv[i * c + j] - mean);
    var /= c;  // biased, as PyTorch
    const long double rstd = 1.0L / std::sqrt(var + eps);
    for (int64_t j = 0; j < c; ++j)
      y[i * c + j] = static_cast<double>((xv[i * c + j] - mean) * rstd * g[j] + b[j]);
  }
  return Tensor::from_vector<double>(x.shape(), y);
}

struct Params {
  Tensor gamma, beta;
};
Params random_params(int64_t c, DType dt, uint64_t seed) {
  return {random_tensor({c}, dt, seed, 0.5, 1.5), random_tensor({c}, dt, seed + 1, -0.5, 0.5)};
}

TEST(LayerNorm, ForwardMatchesDefinition) {
  for (Shape shape : {Shape{3, 7}, Shape{1, 2}, Shape{2, 3, 33}, Shape{5}, Shape{4, 512}}) {
    const int64_t c = shape.back();
    Tensor x = random_tensor(shape, DType::f64, 11, -2.0, 3.0);
    auto [g, b] = random_params(c, DType::f64, 12);
    Tensor ref = reference_layer_norm(x, g, b, 1e-5);
    EXPECT_TRUE(all_close(layer_norm(x, g, b, 1e-5), ref, 1e-13, 1e-13)) << shape_str(shape);
    // f32 against the f64 truth of the same (rounded) inputs.
    Tensor x32 = x.to(DType::f32), g32 = g.to(DType::f32), b32 = b.to(DType::f32);
    Tensor ref32 = reference_layer_norm(x32, g32, b32, 1e-5);
    Tensor y32 = layer_norm(x32, g32, b32, 1e-5);
    EXPECT_EQ(y32.dtype(), DType::f32);
    EXPECT_EQ(y32.shape(), shape);
    EXPECT_TRUE(all_close(y32, ref32, 1e-6, 1e-6)) << shape_str(shape);
  }
}

TEST(LayerNorm, EpsAndConstantRows) {
  // A constant row has var 0: y = beta exactly, whatever eps > 0.
  Tensor x = Tensor::full({2, 4}, 3.25, DType::f64);
  auto [g, b] = random_params(4, DType::f64, 13);
  Tensor y = layer_norm(x, g, b, 1e-5);
  for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(y.at({1, j}), b.at({j}));
  // C = 1 is degenerate the same way: every row is constant.
  Tensor y1 = layer_norm(random_tensor({3, 1}, DType::f64, 16), Tensor::full({1}, 2.0, DType::f64),
                         Tensor::full({1}, 0.25, DType::f64), 1e-5);
  EXPECT_TRUE(bitwise_equal(y1, Tensor::full({3, 1}, 0.25, DType::f64)));
  // eps enters under the root: var = 1 (x = ±1) and eps = 3 halve the output.
  Tensor x2 = Tensor::from_vector<double>({1, 2}, {-1.0, 1.0});
  Tensor y2 = layer_norm(x2, Tensor::ones({2}, DType::f64), Tensor::zeros({2}, DType::f64), 3.0);
  EXPECT_DOUBLE_EQ(y2.at({0, 0}), -0.5);
  EXPECT_DOUBLE_EQ(y2.at({0, 1}), 0.5);
}

// Rows with a mean far from 0 next to their spread: f32 must still track f64 (the mean is
// subtracted as two floats). A single-float mean would be off by ~|mean| * 6e-8 / std ≈ 2e-5.
TEST(LayerNorm, F32AccurateForLargeMean) {
  Tensor x32 = random_tensor({16, 1024}, DType::f32, 14, 300.0, 301.0);
  auto [g, b] = random_params(1024, DType::f32, 15);
  Tensor ref = reference_layer_norm(x32, g, b, 1e-5);
  EXPECT_TRUE(all_close(layer_norm(x32, g, b, 1e-5), ref, 1e-6, 1e-6));
}

// A strided view is normalised along its own last axis, and its gradient has its shape.
TEST(LayerNorm, NonContiguousInput) {
  Tensor base = random_tensor({7, 5}, DType::f64, 17);
  Tensor xt = base.transpose(0, 1);  // (5, 7), strided
  ASSERT_FALSE(xt.is_contiguous());
  auto [g, b] = random_params(7, DType::f64, 18);
  EXPECT_TRUE(bitwise_equal(layer_norm(xt, g, b, 1e-5), layer_norm(xt.contiguous(), g, b, 1e-5)));
  // The gradient of a strided leaf: same values as for its contiguous copy, in its shape.
  Tensor w = random_tensor({5, 7}, DType::f64, 19);
  Tensor leaf = xt.detach().set_requires_grad(true);
  Tensor dense = xt.contiguous().set_requires_grad(true);
  autograd::backward(layer_norm(leaf, g, b, 1e-5), w);
  autograd::backward(layer_norm(dense, g, b, 1e-5), w);
  EXPECT_EQ(leaf.grad().shape(), (Shape{5, 7}));
  EXPECT_TRUE(bitwise_equal(leaf.grad(), dense.grad()));
}

TEST(LayerNorm, Gradients) {
  for (Shape shape : {Shape{3, 2}, Shape{1, 3}, Shape{4, 7}, Shape{2, 3, 33}, Shape{33}}) {
    const int64_t c = shape.back();
    Tensor x = random_tensor(shape, DType::f64, 21).set_requires_grad(true);
    Tensor g = random_tensor({c}, DType::f64, 22, 0.5, 1.5).set_requires_grad(true);
    Tensor b = random_tensor({c}, DType::f64, 23).set_requires_grad(true);
    EXPECT_TRUE(
        gradcheck([](auto& in) { return layer_norm(in[0], in[1], in[2], 1e-5); }, {x, g, b}))
        << shape_str(shape);
    // A large eps changes the maths of the backward (rstd no longer 1/std): still exact.
    EXPECT_TRUE(gradcheck([](auto& in) { return layer_norm(in[0], in[1], in[2], 0.5); }, {x, g, b}))
        << shape_str(shape);
  }
}

TEST(LayerNorm, GradientsWhenOnlySomeInputsNeedThem) {
  Tensor x = random_tensor({5, 7}, DType::f64, 24);
  Tensor g = random_tensor({7}, DType::f64, 25, 0.5, 1.5);
  Tensor b = random_tensor({7}, DType::f64, 26);
  // Only the parameters (the kernel skips dx), then only x (it skips the column sums).
  EXPECT_TRUE(gradcheck([](auto& in) { return layer_norm(in[0], in[1], in[2], 1e-5); },
                        {x, g.clone().set_requires_grad(true), b.clone().set_requires_grad(true)}));
  EXPECT_TRUE(gradcheck([](auto& in) { return layer_norm(in[0], in[1], in[2], 1e-5); },
                        {x.clone().set_requires_grad(true), g, b}));
  EXPECT_TRUE(gradcheck([](auto& in) { return layer_norm(in[0], in[1], in[2], 1e-5); },
                        {x, g, b.clone().set_requires_grad(true)}));
}

// Many rows (more than one 32-row chunk of column partials, and a partial last chunk).
TEST(LayerNorm, ParameterGradientsOverManyRows) {
  Tensor x = random_tensor({75, 3}, DType::f64, 27).set_requires_grad(true);
  Tensor g = random_tensor({3}, DType::f64, 28, 0.5, 1.5).set_requires_grad(true);
  Tensor b = random_tensor({3}, DType::f64, 29).set_requires_grad(true);
  EXPECT_TRUE(gradcheck([](auto& in) { return layer_norm(in[0], in[1], in[2], 1e-5); }, {x, g, b}));
}

TEST(AddLayerNorm, MatchesAddThenLayerNorm) {
  for (DType dt : {DType::f64, DType::f32}) {
    Tensor x = random_tensor({6, 33}, dt, 31).set_requires_grad(true);
    Tensor r = random_tensor({6, 33}, dt, 32).set_requires_grad(true);
    Tensor g = random_tensor({33}, dt, 33, 0.5, 1.5).set_requires_grad(true);
    Tensor b = random_tensor({33}, dt, 34).set_requires_grad(true);
    Tensor wy = random_tensor({6, 33}, dt, 35), ws = random_tensor({6, 33}, dt, 36);
    const double tol = dt == DType::f64 ? 1e-13 : 2e-6;

    AddLayerNormResult fused = add_layer_norm(x, r, g, b, 1e-5);
    autograd::backward(add(mul(fused.y, wy), mul(fused.sum, ws)), Tensor::ones({6, 33}, dt));
    std::vector<Tensor> fused_grads{x.grad(), r.grad(), g.grad(), b.grad()};
    for (Tensor* t : {&x, &r, &g, &b}) t->zero_grad();

    Tensor sum = add(x, r);
    Tensor y = layer_norm(sum, g, b, 1e-5);
    autograd::backward(add(mul(y, wy), mul(sum, ws)), Tensor::ones({6, 33}, dt));
    std::vector<Tensor> composed_grads{x.grad(), r.grad(), g.grad(), b.grad()};

    EXPECT_TRUE(bitwise_equal(fused.sum, sum));  // x + r rounds the same either way
    EXPECT_TRUE(all_close(fused.y, y, tol, tol));
    for (size_t k = 0; k < 4; ++k)
      EXPECT_TRUE(all_close(fused_grads[k], composed_grads[k], tol, tol))
          << "input " << k << " " << dtype_name(dt);
  }
}

TEST(AddLayerNorm, GradientsThroughBothOutputs) {
  for (Shape shape : {Shape{3, 2}, Shape{1, 7}, Shape{2, 3, 33}}) {
    const int64_t c = shape.back();
    Tensor x = random_tensor(shape, DType::f64, 41).set_requires_grad(true);
    Tensor r = random_tensor(shape, DType::f64, 42).set_requires_grad(true);
    Tensor g = random_tensor({c}, DType::f64, 43, 0.5, 1.5).set_requires_grad(true);
    Tensor b = random_tensor({c}, DType::f64, 44).set_requires_grad(true);
    auto both = [](auto& in) {
      AddLayerNormResult o = add_layer_norm(in[0], in[1], in[2], in[3], 1e-5);
      return add(o.y, scale(o.sum, 0.7));
    };
    auto y_only = [](auto& in) { return add_layer_norm(in[0], in[1], in[2], in[3], 1e-5).y; };
    auto sum_only = [](auto& in) { return add_layer_norm(in[0], in[1], in[2], in[3], 1e-5).sum; };
    EXPECT_TRUE(gradcheck(both, {x, r, g, b})) << shape_str(shape);
    EXPECT_TRUE(gradcheck(y_only, {x, r, g, b})) << shape_str(shape);
    EXPECT_TRUE(gradcheck(sum_only, {x, r, g, b})) << shape_str(shape);
    // Only one of the two summands needs a gradient.
    EXPECT_TRUE(gradcheck(both, {x, r.detach(), g.detach(), b.detach()})) << shape_str(shape);
    EXPECT_TRUE(gradcheck(both, {x.detach(), r, g.detach(), b})) << shape_str(shape);
  }
}

TEST(LayerNorm, ErrorsNameTheOpAndShapes) {
  Tensor x = Tensor::zeros({2, 4});
  Tensor g = Tensor::ones({4}), b = Tensor::zeros({4});
  EXPECT_TFM_ERROR(layer_norm(x, Tensor::ones({3}), b, 1e-5),
                   "layer_norm: gamma f32 (3) does not match the last axis of x f32 (2, 4)");
  EXPECT_TFM_ERROR(layer_norm(x, g, Tensor::zeros({2, 4}), 1e-5),
                   "layer_norm: beta f32 (2, 4) does not match the last axis of x f32 (2, 4)");
  EXPECT_TFM_ERROR(layer_norm(x, Tensor::ones({4}, DType::f64), b, 1e-5),
                   "layer_norm: dtypes differ");
  EXPECT_TFM_ERROR(layer_norm(x, g, b, -1.0), "layer_norm: eps must be finite and >= 0");
  EXPECT_TFM_ERROR(layer_norm(Tensor::zeros({2, 4}, DType::i32), g, b, 1e-5),
                   "layer_norm: x must be f32 or f64");
  EXPECT_TFM_ERROR(layer_norm(Tensor::zeros({}), Tensor::ones({1}), Tensor::zeros({1}), 1e-5),
                   "layer_norm: x must have at least one axis");
  EXPECT_TFM_ERROR(add_layer_norm(x, Tensor::zeros({4, 2}), g, b, 1e-5),
                   "add_layer_norm: residual f32 (4, 2) does not match x f32 (2, 4)");
  EXPECT_TFM_ERROR(add_layer_norm(x, x, Tensor::ones({5}), b, 1e-5),
                   "add_layer_norm: gamma f32 (5) does not match the last axis of x f32 (2, 4)");
  EXPECT_TFM_ERROR(add_layer_norm(x, Tensor::zeros({2, 4}, DType::f64), g, b, 1e-5),
                   "add_layer_norm: dtypes differ");
}

TEST(LayerNorm, EmptyBatch) {
  Tensor x = Tensor::zeros({0, 5}, DType::f64).set_requires_grad(true);
  Tensor g = Tensor::ones({5}, DType::f64).set_requires_grad(true);
  Tensor b = Tensor::zeros({5}, DType::f64).set_requires_grad(true);
  Tensor y = layer_norm(x, g, b, 1e-5);
  EXPECT_EQ(y.shape(), (Shape{0, 5}));
  autograd::backward(y, Tensor::zeros({0, 5}, DType::f64));
  EXPECT_TRUE(bitwise_equal(g.grad(), Tensor::zeros({5}, DType::f64)));
  EXPECT_TRUE(bitwise_equal(b.grad(), Tensor::zeros({5}, DType::f64)));
}

// Results and gradients must not depend on the thread count. 300 rows of 257 cover many
// parallel tasks, ten 32-row chunks of column partials and a ragged last chunk.
TEST(LayerNorm, ThreadCountDoesNotChangeBits) {
  Tensor x = random_tensor({300, 257}, DType::f32, 51, -3, 3);
  Tensor r = random_tensor({300, 257}, DType::f32, 52);
  Tensor dy = random_tensor({300, 257}, DType::f32, 53);
  Tensor ds = random_tensor({300, 257}, DType::f32, 54);
  const Params p = random_params(257, DType::f32, 55);
  auto run = [&](int threads) {
    set_threads(threads);
    Tensor xx = x.clone().set_requires_grad(true), rr = r.clone().set_requires_grad(true);
    Tensor g = p.gamma.clone().set_requires_grad(true);
    Tensor b = p.beta.clone().set_requires_grad(true);
    Tensor y = layer_norm(xx, g, b, 1e-5);
    autograd::backward(y, dy);
    std::vector<Tensor> out{y, xx.grad(), g.grad(), b.grad()};
    for (Tensor* t : {&xx, &g, &b}) t->zero_grad();
    AddLayerNormResult o = add_layer_norm(xx, rr, g, b, 1e-5);
    autograd::backward(add(mul(o.y, dy), mul(o.sum, ds)), Tensor::ones({300, 257}));
    for (Tensor t : {o.y, o.sum, xx.grad(), rr.grad(), g.grad(), b.grad()}) out.push_back(t);
    return out;
  };
  const int before = get_threads();
  std::vector<Tensor> one = run(1), two = run(2);
  set_threads(before);
  for (size_t k = 0; k < one.size(); ++k) EXPECT_TRUE(bitwise_equal(one[k], two[k])) << k;
}

}  // namespace
}  // namespace tfm
