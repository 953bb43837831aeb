#include <cmath>
#include <tuple>

#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cross_entropy.h"
#include "tfm/ops/softmax.h"

namespace tfm {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::gradcheck;
using testing::random_tensor;

// Random targets in [0, V) with every `pad_every`-th row set to ignore_index (none when 0).
Tensor make_targets(const Shape& shape, int64_t v, uint64_t seed, int pad_every,
                    int32_t ignore = -100) {
  std::vector<int32_t> t = testing::random_ids(shape, v, seed).to_vector<int32_t>();
  if (pad_every > 0)
    for (size_t i = 0; i < t.size(); i += pad_every) t[i] = ignore;
  return Tensor::from_vector<int32_t>(shape, t);
}

// The target distribution q (N, V): (1 - s) onehot + s / V on kept rows, 0 on ignored ones.
std::vector<double> target_distribution(const Tensor& targets, int64_t v, double s, int64_t ignore,
                                        int64_t* tokens) {
  const std::vector<int32_t> t = targets.to_vector<int32_t>();
  std::vector<double> q(t.size() * v, 0.0);
  *tokens = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == ignore) continue;
    ++*tokens;
    for (int64_t j = 0; j < v; ++j) q[i * v + j] = s / v + (j == t[i] ? 1 - s : 0);
  }
  return q;
}

// PyTorch's definition: mean over kept rows of -Σ_j q_j log p_j, from this library's
// log_softmax and an explicit gather/sum here.
double composed_loss(const Tensor& logits, const Tensor& targets, double s, int64_t ignore) {
  const int64_t v = logits.size(-1);
  int64_t tokens = 0;
  const std::vector<double> q = target_distribution(targets, v, s, ignore, &tokens);
  const std::vector<double> lp = log_softmax(logits.detach()).to(DType::f64).to_vector<double>();
  long double sum = 0;
  for (size_t k = 0; k < q.size(); ++k) sum -= q[k] * lp[k];
  return tokens ? static_cast<double>(sum / tokens) : 0.0;
}

// Same loss from scratch in long double: logsumexp by hand, nothing from the library.
double reference_loss(const Tensor& logits, const Tensor& targets, double s, int64_t ignore) {
  const int64_t v = logits.size(-1);
  int64_t tokens = 0;
  const std::vector<double> q = target_distribution(targets, v, s, ignore, &tokens);
  const std::vector<double> x = logits.to(DType::f64).to_vector<double>();
  long double sum = 0;
  for (size_t i = 0; i * v < x.size(); ++i) {
    long double m = -INFINITY, se = 0;
    for (int64_t j = 0; j < v; ++j) m = std::max<long double>(m, x[i * v + j]);
    for (int64_t j = 0; j < v; ++j) se += std::exp(static_cast<long double>(x[i * v + j]) - m);
    const long double lse = m + std::log(se);
    for (int64_t j = 0; j < v; ++j) sum += q[i * v + j] * (lse - x[i * v + j]);
  }
  return tokens ? static_cast<double>(sum / tokens) : 0.0;
}

TEST(CrossEntropy, MatchesComposedAndReference) {
  struct Case {
    Shape shape;
    double smoothing;
    int pad_every;
  };
  for (const Case& c : {Case{{5, 7}, 0.0, 0}, Case{{5, 7}, 0.1, 3}, Case{{1, 2}, 0.1, 0},
                        Case{{2, 3, 33}, 0.1, 2}, Case{{6, 8000}, 0.1, 4}, Case{{4}, 0.0, 0}}) {
    Shape lead(c.shape.begin(), c.shape.end() - 1);
    Tensor x = random_tensor(c.shape, DType::f64, 1, -4, 4);
    Tensor t = make_targets(lead, c.shape.back(), 2, c.pad_every);
    CrossEntropyResult r = softmax_cross_entropy(x, t, c.smoothing);
    EXPECT_EQ(r.loss.shape(), Shape{});
    EXPECT_EQ(r.loss.dtype(), DType::f64);
    const double ref = reference_loss(x, t, c.smoothing, -100);
    EXPECT_NEAR(r.loss.item(), ref, 1e-13 * std::abs(ref)) << shape_str(c.shape);
    EXPECT_NEAR(r.loss.item(), composed_loss(x, t, c.smoothing, -100), 1e-12 * std::abs(ref));
    // f32: accumulated in double, so it matches the f64 truth of the rounded inputs closely.
    Tensor x32 = x.to(DType::f32);
    CrossEntropyResult r32 = softmax_cross_entropy(x32, t, c.smoothing);
    EXPECT_EQ(r32.loss.dtype(), DType::f32);
    EXPECT_NEAR(r32.loss.item(), reference_loss(x32, t, c.smoothing, -100), 1e-6 * std::abs(ref));
    EXPECT_EQ(r32.tokens, r.tokens);
    EXPECT_EQ(r32.correct, r.correct);
  }
}

TEST(CrossEntropy, HandMadeCounts) {
  // Row 0: tie between 1 and 2, target 1 -> correct (the first maximum wins).
  // Row 1: same tie, target 2 -> wrong. Row 2: right. Row 3: ignored (would be right).
  // Row 4: wrong.
  Tensor x = Tensor::from_vector<double>(
      {5, 3}, {1, 3, 3, /**/ 1, 3, 3, /**/ 5, 0, 0, /**/ 0, 0, 9, /**/ 2, 1, 0});
  Tensor t = Tensor::from_vector<int32_t>({5}, {1, 2, 0, -100, 1});
  for (DType dt : {DType::f64, DType::f32}) {
    CrossEntropyResult r = softmax_cross_entropy(x.to(dt), t);
    EXPECT_EQ(r.tokens, 4);
    EXPECT_EQ(r.correct, 2);
    const double l01 = std::log(std::exp(1.0) + 2 * std::exp(3.0)) - 3;
    const double l2 = std::log(std::exp(5.0) + 2) - 5;
    const double l4 = std::log(std::exp(2.0) + std::exp(1.0) + 1) - 1;
    EXPECT_NEAR(r.nll_sum, 2 * l01 + l2 + l4, 1e-6);
    EXPECT_NEAR(r.loss.item(), (2 * l01 + l2 + l4) / 4, 1e-6);
  }
}

TEST(CrossEntropy, HandMadeSmoothing) {
  // p = (3/4, 1/4); q = (0.95, 0.05) with s = 0.1 over V = 2.
  Tensor x = Tensor::from_vector<double>({1, 2}, {std::log(3.0), 0.0});
  Tensor t = Tensor::from_vector<int32_t>({1}, {0});
  CrossEntropyResult r = softmax_cross_entropy(x, t, 0.1);
  EXPECT_NEAR(r.loss.item(), -(0.95 * std::log(0.75) + 0.05 * std::log(0.25)), 1e-15);
  EXPECT_NEAR(r.nll_sum, -std::log(0.75), 1e-15);  // unsmoothed
  EXPECT_EQ(r.correct, 1);
}

TEST(CrossEntropy, Gradients) {
  for (double s : {0.0, 0.1}) {
    for (Shape shape : {Shape{1, 5}, Shape{4, 7}, Shape{2, 3, 11}, Shape{3}}) {
      Shape lead(shape.begin(), shape.end() - 1);
      Tensor x = random_tensor(shape, DType::f64, 3, -3, 3).set_requires_grad(true);
      for (int pad : {0, 2}) {
        Tensor t = make_targets(lead, shape.back(), 4, pad);
        EXPECT_TRUE(
            gradcheck([&](auto& in) { return softmax_cross_entropy(in[0], t, s).loss; }, {x}))
            << shape_str(shape) << " smoothing " << s << " pad " << pad;
      }
    }
  }
}

// The fused gradient against autograd through log_softmax and the explicit q-weighted sum.
TEST(CrossEntropy, GradientMatchesComposed) {
  for (DType dt : {DType::f64, DType::f32}) {
    Tensor x = random_tensor({7, 301}, dt, 5, -5, 5).set_requires_grad(true);
    Tensor t = make_targets({7}, 301, 6, 3);
    autograd::backward(softmax_cross_entropy(x, t, 0.1).loss, Tensor::full({}, 2.5, dt));
    Tensor fused = x.grad();
    x.zero_grad();
    int64_t tokens = 0;
    std::vector<double> q = target_distribution(t, 301, 0.1, -100, &tokens);
    for (double& e : q) e *= -2.5 / tokens;
    autograd::backward(log_softmax(x), Tensor::from_vector<double>({7, 301}, q).to(dt));
    const double tol = dt == DType::f64 ? 1e-14 : 1e-7;
    EXPECT_TRUE(all_close(fused, x.grad(), tol, tol)) << dtype_name(dt);
    EXPECT_TRUE(bitwise_equal(fused.select(0), Tensor::zeros({301}, dt)));  // ignored row
  }
}

TEST(CrossEntropy, AllIgnored) {
  Tensor x = random_tensor({3, 5}, DType::f64, 7).set_requires_grad(true);
  Tensor t = Tensor::from_vector<int32_t>({3}, {-100, -100, -100});
  CrossEntropyResult r = softmax_cross_entropy(x, t, 0.1);
  EXPECT_EQ(r.loss.item(), 0.0);
  EXPECT_EQ(r.tokens, 0);
  EXPECT_EQ(r.correct, 0);
  EXPECT_EQ(r.nll_sum, 0.0);
  autograd::backward(r.loss);
  EXPECT_TRUE(bitwise_equal(x.grad(), Tensor::zeros({3, 5}, DType::f64)));
  EXPECT_TRUE(gradcheck([&](auto& in) { return softmax_cross_entropy(in[0], t, 0.1).loss; },
                        {x.detach().set_requires_grad(true)}));
}

TEST(CrossEntropy, CustomIgnoreIndex) {
  // Padding id 0 ignored; -100 is then an ordinary (out of range) target.
  Tensor x = random_tensor({4, 6}, DType::f64, 8);
  Tensor t = Tensor::from_vector<int32_t>({4}, {0, 3, 0, 5});
  CrossEntropyResult r = softmax_cross_entropy(x, t, 0.0, 0);
  EXPECT_EQ(r.tokens, 2);
  EXPECT_NEAR(r.loss.item(), reference_loss(x, t, 0.0, 0), 1e-14);
  EXPECT_TFM_ERROR(
      softmax_cross_entropy(x, Tensor::from_vector<int32_t>({4}, {1, -100, 0, 0}), 0.0, 0),
      "target -100 at position (1)");
}

TEST(CrossEntropy, LargeLogitsStayFinite) {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor x = random_tensor({16, 500}, DType::f64, 9, -1e4, 1e4).to(dt).set_requires_grad(true);
    Tensor t = make_targets({16}, 500, 10, 5);
    CrossEntropyResult r = softmax_cross_entropy(x, t, 0.1);
    EXPECT_TRUE(std::isfinite(r.loss.item()));
    // The loss is formed in double from exact differences: f32 loses only the final rounding.
    EXPECT_NEAR(r.loss.item(), reference_loss(x, t, 0.1, -100), 1e-7 * std::abs(r.loss.item()));
    autograd::backward(r.loss);
    const std::vector<double> g = x.grad().to(DType::f64).to_vector<double>();
    for (int64_t i = 0; i < 16; ++i) {
      double row = 0;
      for (int64_t j = 0; j < 500; ++j) {
        EXPECT_TRUE(std::isfinite(g[i * 500 + j]));
        row += g[i * 500 + j];
      }
      EXPECT_NEAR(row, 0.0, 1e-7);  // softmax and q both sum to 1
    }
  }
}

TEST(CrossEntropy, Errors) {
  const char* op = "softmax_cross_entropy: ";
  Tensor x = Tensor::zeros({2, 3, 5});
  Tensor t = Tensor::zeros({2, 3}, DType::i32);
  Tensor bad = Tensor::from_vector<int32_t>({2, 3}, {0, 1, 2, 3, 4, 9});
  EXPECT_TFM_ERROR(softmax_cross_entropy(x, bad),
                   std::string(op) + "target 9 at position (1, 2) is out of range [0, 5)");
  Tensor neg = Tensor::from_vector<int32_t>({2, 3}, {0, -1, 2, 3, 4, 0});
  EXPECT_TFM_ERROR(softmax_cross_entropy(x, neg), "target -1 at position (0, 1)");
  Tensor edge = Tensor::from_vector<int32_t>({2, 3}, {0, 1, 2, 5, 4, 4});  // 5 == V
  EXPECT_TFM_ERROR(softmax_cross_entropy(x, edge), "target 5 at position (1, 0)");
  EXPECT_TFM_ERROR(softmax_cross_entropy(x, Tensor::zeros({2, 3}, DType::i64)),
                   std::string(op) + "targets must be i32, got i64 (2, 3)");
  EXPECT_TFM_ERROR(softmax_cross_entropy(x, Tensor::zeros({2, 3}, DType::f32)),
                   "targets must be i32, got f32 (2, 3)");
  EXPECT_TFM_ERROR(softmax_cross_entropy(x, Tensor::zeros({3, 2}, DType::i32)),
                   std::string(op) +
                       "targets i32 (3, 2) do not match the leading shape of logits f32 (2, 3, "
                       "5), expected (2, 3)");
  EXPECT_TFM_ERROR(softmax_cross_entropy(x, Tensor::zeros({6}, DType::i32)),
                   "do not match the leading shape");
  EXPECT_TFM_ERROR(softmax_cross_entropy(x, t, 1.5), "label_smoothing must be in [0, 1]");
  EXPECT_TFM_ERROR(softmax_cross_entropy(Tensor::zeros({2, 3}, DType::i32), t),
                   "logits must be f32 or f64");
  EXPECT_TFM_ERROR(softmax_cross_entropy(x, Tensor()), "targets is undefined");
}

// Per-row losses are summed in row order, so the totals (and the gradients) are the same bits for
// any thread count. Many rows of widely varying loss make an order-dependent sum show.
TEST(CrossEntropy, ThreadCountDoesNotChangeBits) {
  for (auto [dt, n, v] : {std::tuple{DType::f32, 300, 1001}, std::tuple{DType::f64, 4000, 37}}) {
    Tensor x = random_tensor({n, v}, dt, 11, -20, 20);
    Tensor t = make_targets({n}, v, 12, 7);
    auto run = [&](int threads) {
      set_threads(threads);
      Tensor xx = x.clone().set_requires_grad(true);
      CrossEntropyResult r = softmax_cross_entropy(xx, t, 0.1);
      autograd::backward(r.loss);
      return std::make_tuple(r.loss, r.tokens, r.correct, r.nll_sum, xx.grad());
    };
    const int before = get_threads();
    auto [l1, tok1, c1, n1, g1] = run(1);
    auto [l2, tok2, c2, n2, g2] = run(2);
    set_threads(before);
    EXPECT_TRUE(bitwise_equal(l1, l2)) << dtype_name(dt);
    EXPECT_EQ(tok1, tok2);
    EXPECT_EQ(c1, c2);
    EXPECT_EQ(n1, n2) << dtype_name(dt);  // exact, not near
    EXPECT_TRUE(bitwise_equal(g1, g2)) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace tfm
