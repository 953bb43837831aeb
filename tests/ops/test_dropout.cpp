#include <cmath>
#include <limits>

#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/dropout.h"

namespace tfm {
namespace {

using testing::bitwise_equal;
using testing::gradcheck;
using testing::random_tensor;

using testing::with_threads;

// The documented mask, rebuilt independently: keep element i iff stream.uniform(i) >= p.
std::vector<double> mask_of(uint64_t seed, uint64_t stream, int64_t n, double p) {
  RandomStream rs(seed, stream);
  std::vector<double> m(n);
  for (int64_t i = 0; i < n; ++i) m[i] = rs.uniform(i) >= p ? 1.0 : 0.0;
  return m;
}

// x * mask / (1 - p), computed in double.
Tensor expected_dropout(const Tensor& x, const std::vector<double>& mask, double p) {
  auto v = x.to(DType::f64).to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = v[i] * mask[i] / (1 - p);
  return Tensor::from_vector<double>(x.shape(), v);
}

TEST(Dropout, OutputIsXTimesMaskOverKeep) {
  for (DType dt : {DType::f32, DType::f64}) {
    for (double p : {0.1, 0.5, 0.77}) {
      Tensor x = random_tensor({3, 7, 5}, dt, 1, 0.5, 2.0);  // no zeros: a drop is visible
      Generator gen(42);
      for (int k = 0; k < 3; ++k) gen.next_stream();
      Tensor y = dropout(x, p, true, &gen);
      EXPECT_EQ(gen.position(), 4u) << "exactly one stream per call";
      EXPECT_EQ(y.shape(), x.shape());
      EXPECT_EQ(y.dtype(), dt);
      const auto mask = mask_of(42, 3, x.numel(), p);
      const double rtol = dt == DType::f32 ? 2.5e-7 : 1e-15;
      EXPECT_TRUE(testing::all_close(y, expected_dropout(x, mask, p), rtol, 0)) << "p " << p;
      // Dropped elements are exactly zero.
      const auto yv = y.to(DType::f64).to_vector<double>();
      for (size_t i = 0; i < yv.size(); ++i)
        if (mask[i] == 0) {
          EXPECT_EQ(yv[i], 0.0);
        }
    }
  }
}

TEST(Dropout, UniformEqualToPIsKept) {
  // p equal to an element's uniform value: ">=" keeps it; just above p drops it.
  RandomStream rs(21, 0);
  for (int64_t i : {0, 5, 17}) {
    const double p = rs.uniform(i);
    Tensor x = Tensor::ones({20}, DType::f64);
    Generator g1(21), g2(21);
    EXPECT_NE(dropout(x, p, true, &g1).at({i}), 0.0) << "element " << i;
    EXPECT_EQ(dropout(x, std::nextafter(p, 1.0), true, &g2).at({i}), 0.0) << "element " << i;
  }
}

TEST(Dropout, MaskFollowsLogicalOrderOfStridedInput) {
  Tensor x = random_tensor({6, 4}, DType::f64, 2, 1, 2);
  Tensor xt = x.transpose(0, 1);  // (4, 6), not contiguous
  Generator g1(7), g2(7);
  EXPECT_TRUE(bitwise_equal(dropout(xt, 0.4, true, &g1), dropout(xt.contiguous(), 0.4, true, &g2)));
}

TEST(Dropout, KeptFractionIsOneMinusP) {
  constexpr int64_t n = 100000;
  Tensor x = Tensor::ones({n});
  for (double p : {0.05, 0.1, 0.3, 0.5, 0.9}) {
    Generator gen(3);
    const auto y = dropout(x, p, true, &gen).to_vector<float>();
    int64_t kept = 0;
    for (float v : y) {
      kept += v != 0;
      ASSERT_TRUE(v == 0 || v == static_cast<float>(1 / (1 - p))) << v;
    }
    const double sigma = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(double(kept) / n, 1 - p, 5 * sigma) << "p " << p;
  }
}

TEST(Dropout, SameBitsForAnyThreadCount) {
  Tensor x = random_tensor({1000, 101}, DType::f32, 4);  // ~25 tasks of Philox blocks
  Tensor gy = random_tensor({1000, 101}, DType::f32, 5);
  auto run = [&](int threads) {
    return with_threads(threads, [&] {
      Generator gen(11);
      Tensor xr = x.clone().set_requires_grad(true);
      Tensor y = dropout(xr, 0.3, true, &gen);
      autograd::backward(y, gy);
      return std::make_pair(y.detach(), xr.grad());
    });
  };
  auto [y1, g1] = run(1);
  auto [y2, g2] = run(2);
  EXPECT_TRUE(bitwise_equal(y1, y2));
  EXPECT_TRUE(bitwise_equal(g1, g2));
}

TEST(Dropout, SeedsAndStreamsGiveDifferentMasks) {
  Tensor x = Tensor::ones({4096});
  Generator a(1), b(1), c(2);
  Tensor ya = dropout(x, 0.5, true, &a);
  EXPECT_TRUE(bitwise_equal(ya, dropout(x, 0.5, true, &b)));   // same seed: same mask
  EXPECT_FALSE(bitwise_equal(ya, dropout(x, 0.5, true, &c)));  // other seed
  EXPECT_FALSE(bitwise_equal(ya, dropout(x, 0.5, true, &a)));  // next stream
  // Without a generator: the default one, which manual_seed resets.
  manual_seed(1);
  EXPECT_TRUE(bitwise_equal(dropout(x, 0.5, true), ya));
  EXPECT_EQ(default_generator().position(), 1u);
}

TEST(Dropout, EvalAndZeroPAreIdentity) {
  Tensor x = random_tensor({3, 4}, DType::f64, 6).set_requires_grad(true);
  Generator gen(5);
  const size_t tape = autograd::tape_size();
  for (auto [p, training] : {std::pair{0.0, true}, std::pair{0.5, false}, std::pair{0.0, false}}) {
    Tensor y = dropout(x, p, training, &gen);
    EXPECT_EQ(y.storage(), x.storage());
    EXPECT_EQ(y.autograd_meta(), x.autograd_meta());  // the same tensor, not a copy
  }
  EXPECT_EQ(gen.position(), 0u);  // identity takes no stream
  EXPECT_EQ(autograd::tape_size(), tape);
}

TEST(Dropout, BackwardUsesTheSameMask) {
  for (DType dt : {DType::f32, DType::f64}) {
    const double p = 0.35;
    Tensor x = random_tensor({5, 9}, dt, 7).set_requires_grad(true);
    Tensor g = random_tensor({5, 9}, dt, 8);
    Generator gen(9);
    gen.next_stream();
    autograd::backward(dropout(x, p, true, &gen), g);
    const double rtol = dt == DType::f32 ? 2.5e-7 : 1e-15;
    EXPECT_TRUE(
        testing::all_close(x.grad(), expected_dropout(g, mask_of(9, 1, 45, p), p), rtol, 0));
  }
}

TEST(Dropout, Gradients) {
  for (Shape shape : {Shape{1}, Shape{7}, Shape{3, 1, 5}, Shape{2, 33}}) {
    for (double p : {0.2, 0.6}) {
      Tensor x = random_tensor(shape, DType::f64, 10).set_requires_grad(true);
      // A fresh generator per call: every evaluation sees the same mask.
      EXPECT_TRUE(gradcheck(
          [p](auto& in) {
            Generator gen(13);
            return dropout(in[0], p, true, &gen);
          },
          {x}))
          << shape_str(shape) << " p " << p;
    }
  }
}

TEST(Dropout, Errors) {
  Tensor x = Tensor::zeros({2, 3});
  EXPECT_TFM_ERROR(dropout(x, 1.0, true), "dropout: p must be in [0, 1), got 1 for x f32 (2, 3)");
  EXPECT_TFM_ERROR(dropout(x, -0.1, true), "dropout: p must be in [0, 1), got -0.1");
  EXPECT_TFM_ERROR(dropout(x, 1.5, false), "p must be in [0, 1)");  // even in eval mode
  EXPECT_TFM_ERROR(dropout(x, std::numeric_limits<double>::quiet_NaN(), true), "got nan");
  EXPECT_TFM_ERROR(dropout(Tensor::zeros({2}, DType::i32), 0.5, true),
                   "dropout: x must be f32 or f64, got i32 (2)");
  EXPECT_TFM_ERROR(dropout(Tensor::zeros({2}, DType::i32), 0.5, false), "dropout: x must be f32");
  EXPECT_TFM_ERROR(dropout(Tensor(), 0.5, true), "dropout: x is undefined");
}

}  // namespace
}  // namespace tfm
