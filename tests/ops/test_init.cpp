#include <cmath>

#include "support/test_util.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/init.h"

namespace tfm {
namespace {

using testing::bitwise_equal;

using testing::with_threads;

struct Stats {
  double mean = 0, var = 0, min = INFINITY, max = -INFINITY;
};
Stats stats(const Tensor& t) {
  Stats s;
  const auto v = t.to(DType::f64).to_vector<double>();
  double sum = 0, sum2 = 0;
  for (double x : v) {
    sum += x;
    sum2 += x * x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  s.mean = sum / v.size();
  s.var = sum2 / v.size() - s.mean * s.mean;
  return s;
}

TEST(Init, UniformIsElementIOfTheNextStream) {
  Tensor t = Tensor::empty({7, 9}, DType::f64);
  Generator gen(5);
  gen.next_stream();
  uniform_(t, -0.5, 2.0, gen);
  EXPECT_EQ(gen.position(), 2u);
  RandomStream rs(5, 1);
  const auto v = t.to_vector<double>();
  // Near, not equal: the library is built with -march=native and may fuse the multiply-add.
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_NEAR(v[i], -0.5 + 2.5 * rs.uniform_f64(i), 1e-15) << i;
}

TEST(Init, UniformMoments) {
  constexpr int64_t n = 100000;
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor t = Tensor::empty({n}, dt);
    Generator gen(6);
    uniform_(t, 1.0, 3.0, gen);
    const Stats s = stats(t);
    EXPECT_GE(s.min, 1.0);
    EXPECT_LE(s.max, 3.0);
    EXPECT_LT(s.min, 1.001);
    EXPECT_GT(s.max, 2.999);
    EXPECT_NEAR(s.mean, 2.0, 5 * std::sqrt(4.0 / 12 / n));
    EXPECT_NEAR(s.var, 4.0 / 12, 5 * 4 * std::sqrt(1.0 / 180 / n));
  }
}

TEST(Init, NormalMeanAndStd) {
  constexpr int64_t n = 100000;
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor t = Tensor::empty({100, 1000}, dt);
    Generator gen(7);
    normal_(t, 0.5, 0.02, gen);
    const Stats s = stats(t);
    EXPECT_NEAR(s.mean, 0.5, 5 * 0.02 / std::sqrt(double(n)));
    EXPECT_NEAR(std::sqrt(s.var), 0.02, 5 * 0.02 / std::sqrt(2.0 * n));
  }
  Tensor t = Tensor::empty({33}, DType::f64);
  Generator gen(8);
  normal_(t, -1.0, 3.0, gen);
  RandomStream rs(8, 0);
  for (int64_t i = 0; i < 33; ++i) EXPECT_NEAR(t.at({i}), -1.0 + 3.0 * rs.normal(i), 1e-14);
  normal_(t, 4.0, 0.0, gen);  // std 0: constant
  EXPECT_TRUE(bitwise_equal(t, Tensor::full({33}, 4.0, DType::f64)));
}

TEST(Init, XavierBoundAndVariance) {
  struct Case {
    Shape shape;
    double gain, fan_in, fan_out;
  };
  for (Case c : {Case{{300, 200}, 1.0, 200, 300}, Case{{512, 512}, 2.0, 512, 512},
                 Case{{40, 30, 5}, 1.0, 150, 200}, Case{{1, 1}, 1.0, 1, 1}}) {
    for (DType dt : {DType::f32, DType::f64}) {
      Tensor t = Tensor::empty(c.shape, dt);
      Generator gen(9);
      xavier_uniform_(t, gen, c.gain);
      EXPECT_EQ(gen.position(), 1u);
      const double bound = c.gain * std::sqrt(6.0 / (c.fan_in + c.fan_out));
      const Stats s = stats(t);
      EXPECT_LE(s.max, bound);
      EXPECT_GE(s.min, -bound);
      const int64_t n = t.numel();
      if (n < 1000) continue;
      EXPECT_GT(s.max, 0.99 * bound);
      EXPECT_LT(s.min, -0.99 * bound);
      // Var of U(-b, b) is b^2 / 3; the sample variance's relative sd is about sqrt(0.8 / n).
      EXPECT_NEAR(s.var / (bound * bound / 3), 1.0, 5 * std::sqrt(0.8 / n)) << shape_str(c.shape);
      EXPECT_NEAR(s.mean, 0.0, 5 * bound / std::sqrt(3.0 * n));
    }
  }
}

TEST(Init, ReproduciblePerSeed) {
  auto draw = [](uint64_t seed, int which) {
    Tensor t = Tensor::empty({64, 48});
    Generator gen(seed);
    if (which == 0) uniform_(t, -1, 1, gen);
    if (which == 1) normal_(t, 0, 1, gen);
    if (which == 2) xavier_uniform_(t, gen);
    return t;
  };
  for (int which : {0, 1, 2}) {
    EXPECT_TRUE(bitwise_equal(draw(3, which), draw(3, which)));
    EXPECT_FALSE(bitwise_equal(draw(3, which), draw(4, which)));
  }
  // Consecutive calls on one generator differ (each takes its own stream).
  Generator gen(3);
  Tensor a = Tensor::empty({16}), b = Tensor::empty({16});
  normal_(a, 0, 1, gen);
  normal_(b, 0, 1, gen);
  EXPECT_FALSE(bitwise_equal(a, b));
}

TEST(Init, SameBitsForAnyThreadCount) {
  auto run = [](int threads) {
    return with_threads(threads, [] {
      Generator gen(10);
      Tensor u = Tensor::empty({300, 301}), n = Tensor::empty({300, 301}, DType::f64);
      uniform_(u, -2, 2, gen);
      normal_(n, 0, 1, gen);
      return std::make_pair(u, n);
    });
  };
  auto [u1, n1] = run(1);
  auto [u2, n2] = run(2);
  EXPECT_TRUE(bitwise_equal(u1, u2));
  EXPECT_TRUE(bitwise_equal(n1, n2));
}

TEST(Init, StridedTargetsUseLogicalOrder) {
  Tensor base = Tensor::zeros({4, 6}, DType::f64);
  Tensor view = base.transpose(0, 1);  // (6, 4), not contiguous
  Generator g1(11), g2(11);
  uniform_(view, 0, 1, g1);
  Tensor ref = Tensor::empty({6, 4}, DType::f64);
  uniform_(ref, 0, 1, g2);
  EXPECT_TRUE(bitwise_equal(view, ref));
  EXPECT_TRUE(bitwise_equal(base, ref.transpose(0, 1).contiguous()));
}

TEST(Init, Errors) {
  Generator gen(0);
  Tensor t = Tensor::empty({2, 3});
  EXPECT_TFM_ERROR(uniform_(t, 1, 0, gen),
                   "uniform_: need finite lo <= hi, got [1, 0) for f32 (2, 3)");
  EXPECT_TFM_ERROR(uniform_(t, 0, INFINITY, gen), "uniform_: need finite lo <= hi");
  EXPECT_TFM_ERROR(normal_(t, 0, -1, gen),
                   "normal_: need finite mean and std >= 0, got mean 0, std -1");
  Tensor i = Tensor::zeros({2}, DType::i32);
  EXPECT_TFM_ERROR(uniform_(i, 0, 1, gen), "uniform_: tensor must be f32 or f64, got i32 (2)");
  Tensor v = Tensor::empty({5});
  EXPECT_TFM_ERROR(xavier_uniform_(v, gen),
                   "xavier_uniform_: tensor needs at least 2 axes (fan_out, fan_in), got f32 (5)");
  EXPECT_TFM_ERROR(xavier_uniform_(t, gen, -1.0), "gain must be finite and >= 0, got -1");
  Tensor u;
  EXPECT_TFM_ERROR(normal_(u, 0, 1, gen), "normal_: tensor is undefined");
  EXPECT_EQ(gen.position(), 0u);  // failed calls take no stream
  Tensor e = Tensor::empty({0, 3});
  xavier_uniform_(e, gen);  // empty: nothing to fill, still one stream
  EXPECT_EQ(gen.position(), 1u);
}

}  // namespace
}  // namespace tfm

namespace tfm {
namespace {

// A no_fill generator leaves tensors as they are and draws no stream, so a model built for a load
// costs no random numbers; a filling one changes them.
TEST(Init, NoFillGeneratorLeavesTensorsAlone) {
  for (bool fill : {false, true}) {
    Generator g = fill ? Generator(3) : Generator::no_fill();
    Tensor a = Tensor::full({4, 5}, 7.0f), b = Tensor::full({4, 5}, 7.0f),
           c = Tensor::full({4, 5}, 7.0f);
    normal_(a, 0.0, 1.0, g);
    uniform_(b, -1.0, 1.0, g);
    xavier_uniform_(c, g);
    int unchanged = 0;
    for (const Tensor* t : {&a, &b, &c})
      for (int64_t i = 0; i < 20; ++i) unchanged += t->data<float>()[i] == 7.0f;
    EXPECT_EQ(unchanged, fill ? 0 : 60) << "fill " << fill;
    EXPECT_EQ(g.position(), fill ? 3u : 0u);
  }
}

}  // namespace
}  // namespace tfm
