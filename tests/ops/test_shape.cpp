#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/elementwise.h"
#include "tfm/ops/shape.h"

namespace tfm {
namespace {

using testing::bitwise_equal;
using testing::gradcheck;
using testing::random_tensor;

using testing::with_threads;

// Element [i] of x along `axis`, the other indices fixed by `idx` (a full index of x).
double at_index(const Tensor& x, const Shape& idx) {
  int64_t off = x.offset();
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * x.strides()[d];
  Tensor flat = Tensor::from_storage(x.storage(), {1}, x.dtype(), off);
  return flat.at({0});
}

// Visits every full index of shape in row-major order.
template <typename F>
void for_each_index(const Shape& shape, F&& f) {
  const int64_t n = shape_numel(shape);
  Shape idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

TEST(Reshape, ViewWhenContiguousCopyOtherwise) {
  Tensor x = random_tensor({2, 3, 4}, DType::f32, 1);
  Tensor y = reshape(x, {-1, 4});
  EXPECT_EQ(y.shape(), (Shape{6, 4}));
  EXPECT_EQ(y.storage(), x.storage());
  EXPECT_TRUE(bitwise_equal(y, x.reshape({6, 4})));
  Tensor xt = x.transpose(0, 2);  // (4, 3, 2)
  Tensor z = reshape(xt, {12, 2});
  EXPECT_NE(z.storage(), x.storage());
  EXPECT_TRUE(bitwise_equal(z, xt.contiguous().reshape({12, 2})));
  EXPECT_TFM_ERROR(reshape(x, {5, -1}), "reshape: cannot infer -1 in (5, -1) for f32 (2, 3, 4)");
  EXPECT_TFM_ERROR(reshape(xt, {7}), "reshape: f32 (4, 3, 2) cannot become (7)");
  EXPECT_TFM_ERROR(reshape(Tensor(), {1}), "reshape: x is undefined");
}

TEST(Reshape, Gradients) {
  Tensor x = random_tensor({3, 1, 5}, DType::f64, 2).set_requires_grad(true);
  EXPECT_TRUE(gradcheck([](auto& in) { return reshape(in[0], {5, 3}); }, {x}));
  EXPECT_TRUE(gradcheck([](auto& in) { return reshape(in[0], {15}); }, {x}));
  EXPECT_TRUE(gradcheck([](auto& in) { return reshape(transpose(in[0], 0, 2), {-1}); }, {x}));
  Tensor s = random_tensor({1}, DType::f64, 3).set_requires_grad(true);
  EXPECT_TRUE(gradcheck([](auto& in) { return reshape(in[0], {}); }, {s}));
}

TEST(Transpose, MatchesStridedViewAndIsContiguous) {
  for (DType dt : {DType::f32, DType::f64, DType::i32}) {
    Tensor x = random_tensor({2, 3, 4, 5}, DType::f64, 4, -100, 100).to(dt);
    for (auto [a, b] : {std::pair{1, 2}, std::pair{0, 3}, std::pair{-1, -2}, std::pair{2, 2}}) {
      Tensor y = transpose(x, a, b);
      EXPECT_TRUE(y.is_contiguous());
      Shape expect_shape = x.shape();
      const int64_t a0 = a < 0 ? a + 4 : a, b0 = b < 0 ? b + 4 : b;
      std::swap(expect_shape[a0], expect_shape[b0]);
      ASSERT_EQ(y.shape(), expect_shape);
      for_each_index(y.shape(), [&](const Shape& idx) {
        Shape src = idx;
        std::swap(src[a0], src[b0]);
        ASSERT_EQ(at_index(y, idx), at_index(x, src));
      });
    }
  }
  EXPECT_TFM_ERROR(transpose(Tensor::zeros({2, 3}), 0, 2),
                   "transpose: axes (0, 2) out of range for f32 (2, 3)");
}

TEST(Transpose, Gradients) {
  Tensor x = random_tensor({3, 1, 5}, DType::f64, 5).set_requires_grad(true);
  EXPECT_TRUE(gradcheck([](auto& in) { return transpose(in[0], 0, 2); }, {x}));
  EXPECT_TRUE(gradcheck([](auto& in) { return transpose(in[0], -1, 1); }, {x}));
  Tensor y = random_tensor({2, 3, 4, 5}, DType::f64, 6).set_requires_grad(true);
  EXPECT_TRUE(gradcheck([](auto& in) { return transpose(in[0], 1, 2); }, {y}));
  // Input itself a strided view.
  EXPECT_TRUE(gradcheck([](auto& in) { return transpose(transpose(in[0], 0, 3), 1, 3); }, {y}));
}

TEST(Narrow, ValuesAndViews) {
  Tensor x = random_tensor({3, 5, 4}, DType::f32, 7);
  for (int64_t axis : {0, 1, 2, -1}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    for (auto [start, len] : {std::pair{0, 1}, std::pair{1, 2}, std::pair{2, 0}}) {
      Tensor y = narrow(x, axis, start, len);
      Shape s = x.shape();
      s[a] = len;
      ASSERT_EQ(y.shape(), s);
      EXPECT_TRUE(y.is_contiguous());
      for_each_index(s, [&](const Shape& idx) {
        Shape src = idx;
        src[a] += start;
        ASSERT_EQ(at_index(y, idx), at_index(x, src));
      });
    }
  }
  // Axis 0 of a contiguous tensor: a view; the whole axis: a view too.
  EXPECT_EQ(narrow(x, 0, 1, 2).storage(), x.storage());
  EXPECT_EQ(narrow(x, 1, 0, 5).storage(), x.storage());
  EXPECT_NE(narrow(x, 1, 1, 2).storage(), x.storage());
}

TEST(Narrow, Gradients) {
  Tensor x = random_tensor({3, 5, 4}, DType::f64, 8).set_requires_grad(true);
  for (int64_t axis : {0, 1, 2}) {
    using Range = std::pair<int64_t, int64_t>;
    for (Range r : {Range{0, 1}, Range{1, 2}, Range{0, x.size(axis)}}) {
      const int64_t start = r.first, len = r.second;
      EXPECT_TRUE(gradcheck([&](auto& in) { return narrow(in[0], axis, start, len); }, {x}))
          << "axis " << axis << " start " << start << " len " << len;
    }
  }
  // Overlapping narrows of one tensor: gradients add.
  EXPECT_TRUE(
      gradcheck([](auto& in) { return mul(narrow(in[0], 1, 0, 3), narrow(in[0], 1, 2, 3)); }, {x}));
}

TEST(Narrow, Errors) {
  Tensor x = Tensor::zeros({2, 4});
  EXPECT_TFM_ERROR(narrow(x, 2, 0, 1), "narrow: axis 2 out of range for f32 (2, 4)");
  EXPECT_TFM_ERROR(narrow(x, -3, 0, 1), "narrow: axis -3 out of range");
  EXPECT_TFM_ERROR(narrow(x, 1, 2, 3), "narrow: [2, 2 + 3) out of range on axis 1 of f32 (2, 4)");
  EXPECT_TFM_ERROR(narrow(x, 1, -1, 1), "narrow: [-1, -1 + 1) out of range");
  EXPECT_TFM_ERROR(narrow(x, 0, 0, -1), "out of range on axis 0");
}

TEST(Concat, ValuesAlongEachAxis) {
  for (int64_t axis : {0, 1, 2, -2}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    std::vector<Tensor> xs;
    for (int64_t k = 0; k < 3; ++k) {
      Shape s = {2, 3, 4};
      s[a] = k + 1;  // parts of sizes 1, 2, 3 along the axis
      xs.push_back(random_tensor(s, DType::f32, 10 + k));
    }
    Tensor y = concat(xs, axis);
    Shape s = {2, 3, 4};
    s[a] = 6;
    ASSERT_EQ(y.shape(), s);
    for_each_index(s, [&](const Shape& idx) {
      // Part k holds positions [k(k+1)/2, (k+1)(k+2)/2) of the axis.
      int64_t k = 0, i = idx[a];
      while (i >= k + 1) i -= ++k;
      Shape src = idx;
      src[a] = i;
      ASSERT_EQ(at_index(y, idx), at_index(xs[k], src));
    });
  }
  // Strided and i32 inputs; zero-length parts.
  Tensor a = Tensor::from_vector<int32_t>({2, 2}, {1, 2, 3, 4});
  Tensor b = Tensor::zeros({0, 2}, DType::i32);
  EXPECT_EQ(concat({a.transpose(0, 1), b, a}, 0).to_vector<int32_t>(),
            (std::vector<int32_t>{1, 3, 2, 4, 1, 2, 3, 4}));
}

TEST(Concat, Gradients) {
  Tensor a = random_tensor({2, 1, 3}, DType::f64, 20).set_requires_grad(true);
  Tensor b = random_tensor({2, 4, 3}, DType::f64, 21).set_requires_grad(true);
  Tensor c = random_tensor({2, 2, 3}, DType::f64, 22);  // needs no gradient
  EXPECT_TRUE(gradcheck([](auto& in) { return concat({in[0], in[1], in[2]}, 1); }, {a, b, c}));
  EXPECT_TRUE(gradcheck([](auto& in) { return concat({in[2], in[0]}, -2); }, {a, b, c}));
  // One tensor twice: both slots' gradients add.
  EXPECT_TRUE(gradcheck([](auto& in) { return concat({in[0], in[1], in[0]}, 1); }, {a, b}));
  Tensor d = random_tensor({3}, DType::f64, 23).set_requires_grad(true);
  EXPECT_TRUE(gradcheck([](auto& in) { return concat({in[0]}, 0); }, {d}));
}

TEST(Concat, ManyInputsBeyondOneTapeNode) {
  std::vector<Tensor> xs;
  for (int k = 0; k < 37; ++k)
    xs.push_back(random_tensor({2, 1 + k % 3}, DType::f64, 30 + k).set_requires_grad(true));
  Tensor y = concat(xs, 1);
  EXPECT_EQ(y.size(1), 12 * 6 + 1);
  int64_t at = 0;
  for (const Tensor& x : xs) {
    EXPECT_TRUE(bitwise_equal(narrow(y.detach(), 1, at, x.size(1)), x.detach()));
    at += x.size(1);
  }
  EXPECT_TRUE(gradcheck([](auto& in) { return concat(in, 1); }, xs));
}

TEST(Concat, Errors) {
  Tensor a = Tensor::zeros({2, 3});
  EXPECT_TFM_ERROR(concat({a, Tensor::zeros({3, 3})}, 1),
                   "concat: input 1 f32 (3, 3) does not match input 0 f32 (2, 3) outside axis 1");
  EXPECT_TFM_ERROR(concat({a, Tensor::zeros({2, 3, 1})}, 0), "does not match input 0");
  EXPECT_TFM_ERROR(concat({a, Tensor::zeros({2, 3}, DType::f64)}, 0),
                   "concat: input 1 f64 (2, 3) has another dtype than input 0 f32 (2, 3)");
  EXPECT_TFM_ERROR(concat({a, a}, 2), "concat: axis 2 out of range for f32 (2, 3)");
  EXPECT_TFM_ERROR(concat({}, 0), "concat: no inputs");
  EXPECT_TFM_ERROR(concat({a, Tensor()}, 0), "concat: input 1 is undefined");
}

TEST(Split, ValuesAndRoundTrips) {
  Tensor x = random_tensor({3, 7, 2}, DType::f32, 40);
  for (int64_t axis : {0, 1, 2}) {
    const int64_t n = x.size(axis);
    std::vector<int64_t> sizes = {n - 1, 0, 1};
    std::vector<Tensor> parts = split(x, sizes, axis);
    ASSERT_EQ(parts.size(), 3u);
    int64_t at = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
      EXPECT_EQ(parts[k].size(axis), sizes[k]);
      EXPECT_TRUE(bitwise_equal(parts[k], narrow(x, axis, at, sizes[k])));
      at += sizes[k];
    }
    EXPECT_TRUE(bitwise_equal(concat(parts, axis), x));  // concat ∘ split = identity
  }
  std::vector<Tensor> xs = {random_tensor({2, 3}, DType::f64, 41),
                            random_tensor({2, 1}, DType::f64, 42)};
  std::vector<Tensor> back = split(concat(xs, -1), {3, 1}, -1);  // split ∘ concat = identity
  EXPECT_TRUE(bitwise_equal(back[0], xs[0]));
  EXPECT_TRUE(bitwise_equal(back[1], xs[1]));
  // A strided input splits in logical order.
  Tensor xt = x.transpose(0, 1);
  EXPECT_TRUE(bitwise_equal(split(xt, {2, 5}, 0)[1], narrow(xt.contiguous(), 0, 2, 5)));
}

TEST(Split, Gradients) {
  Tensor x = random_tensor({4, 5}, DType::f64, 43).set_requires_grad(true);
  // All parts used.
  EXPECT_TRUE(gradcheck(
      [](auto& in) {
        auto p = split(in[0], {2, 3}, 1);
        return concat({mul(p[1], p[1]), p[0]}, 1);
      },
      {x}));
  // Parts nothing depends on (the tape hands their backward zeros).
  EXPECT_TRUE(gradcheck([](auto& in) { return split(in[0], {1, 2, 1}, 0)[1]; }, {x}));
  EXPECT_TRUE(gradcheck([](auto& in) { return split(in[0], {1, 4}, -1)[0]; }, {x}));
  Tensor one = random_tensor({1}, DType::f64, 44).set_requires_grad(true);
  EXPECT_TRUE(gradcheck([](auto& in) { return split(in[0], {1}, 0)[0]; }, {one}));
}

TEST(Split, UnusedPartsGetZeroGradient) {
  Tensor x = random_tensor({2, 6}, DType::f32, 45).set_requires_grad(true);
  auto parts = split(x, {2, 3, 1}, 1);
  autograd::backward(parts[1], Tensor::ones({2, 3}));
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t c = 0; c < 6; ++c)
      EXPECT_EQ(x.grad().at({r, c}), c >= 2 && c < 5 ? 1.0 : 0.0) << r << "," << c;
}

TEST(Split, ManyPartsBeyondOneTapeNode) {
  Tensor x = random_tensor({40, 2}, DType::f64, 46).set_requires_grad(true);
  std::vector<int64_t> sizes(40, 1);
  auto parts = split(x, sizes, 0);
  ASSERT_EQ(parts.size(), 40u);
  for (int64_t k = 0; k < 40; ++k) EXPECT_TRUE(bitwise_equal(parts[k], x.detach().slice(k, k + 1)));
  EXPECT_TRUE(gradcheck(
      [&](auto& in) {
        auto p = split(in[0], sizes, 0);
        std::vector<Tensor> used;
        for (int k = 0; k < 40; k += 3) used.push_back(mul(p[k], p[39 - k]));
        return concat(used, 0);
      },
      {x}));
}

TEST(Split, Errors) {
  Tensor x = Tensor::zeros({2, 3});
  EXPECT_TFM_ERROR(split(x, {2, 2}, 1),
                   "split: sizes (2, 2) sum to 4, but axis 1 of f32 (2, 3) has 3");
  EXPECT_TFM_ERROR(split(x, {4, -1}, 1), "split: negative size in (4, -1) for f32 (2, 3)");
  EXPECT_TFM_ERROR(split(x, {}, 0), "split: no sizes for f32 (2, 3)");
  EXPECT_TFM_ERROR(split(x, {2}, -3), "split: axis -3 out of range for f32 (2, 3)");
}

TEST(ShapeOps, SameBitsForAnyThreadCountAndMatchCoreCopies) {
  // Large enough that the strided gather and block copies run as several tasks.
  Tensor x = random_tensor({4, 96, 8, 64}, DType::f32, 50);  // (B, T, H, Dh)
  auto run = [&](int threads) {
    return with_threads(threads, [&] {
      Tensor p = x.clone().set_requires_grad(true);
      Tensor t = transpose(p, 1, 2);   // (B, H, T, Dh)
      Tensor t2 = transpose(p, 1, 3);  // strided inner loop
      auto parts = split(reshape(t, {4, 8, -1}), {1000, 6144 - 1000}, 2);
      Tensor n = narrow(t2, 3, 5, 50);
      Tensor c = concat({parts[1], parts[0]}, 2);
      autograd::backward(concat({reshape(c, {-1}), reshape(n, {-1})}, 0),
                         random_tensor({4 * 8 * 6144 + 4 * 64 * 8 * 50}, DType::f32, 51));
      return std::vector<Tensor>{t.detach(), t2.detach(), n.detach(), c.detach(), p.grad()};
    });
  };
  auto one = run(1), two = run(2);
  for (size_t k = 0; k < one.size(); ++k) EXPECT_TRUE(bitwise_equal(one[k], two[k])) << k;
  // Against the core's serial strided copy.
  EXPECT_TRUE(bitwise_equal(two[0], x.transpose(1, 2).contiguous()));
  EXPECT_TRUE(bitwise_equal(two[1], x.transpose(1, 3).contiguous()));
}

}  // namespace
}  // namespace tfm
