// The global gradient norm and clipping: against a long-double sum, the same for any thread
// count, and Adam's grad_scale equal to scaling the gradients first.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/ops/reduce.h"
#include "tfm/train/grad_norm.h"
#include "tfm/train/optimizer.h"

namespace tfm {
namespace {

using testing::random_tensor;

// Parameters with gradients g = the given tensors (through sum(p * g)).
std::vector<std::pair<std::string, Tensor>> params_with_grads(const std::vector<Tensor>& grads) {
  std::vector<std::pair<std::string, Tensor>> params;
  for (size_t i = 0; i < grads.size(); ++i) {
    Tensor p = random_tensor(grads[i].shape(), DType::f32, 100 + i);
    p.set_requires_grad(true);
    autograd::accumulate(*p.autograd_meta(), grads[i].clone());
    params.emplace_back("p" + std::to_string(i), p);
  }
  return params;
}

TEST(GradNorm, MatchesALongDoubleSumAndIgnoresParametersWithoutGradients) {
  const std::vector<Tensor> grads = {random_tensor({300, 257}, DType::f32, 1),
                                     random_tensor({7}, DType::f32, 2),
                                     random_tensor({2, 70000}, DType::f32, 3)};
  auto params = params_with_grads(grads);
  Tensor no_grad = random_tensor({5}, DType::f32, 4);
  no_grad.set_requires_grad(true);
  params.emplace_back("none", no_grad);
  long double sum = 0;
  for (const Tensor& g : grads) {
    for (int64_t i = 0; i < g.numel(); ++i) {
      const long double v = g.data<float>()[i];
      sum += v * v;
    }
  }
  const double norm = global_grad_norm(params);
  EXPECT_NEAR(norm, std::sqrt(static_cast<double>(sum)), 1e-12 * norm);
  const double n1 = testing::with_threads(1, [&] { return global_grad_norm(params); });
  const double n2 = testing::with_threads(2, [&] { return global_grad_norm(params); });
  EXPECT_EQ(n1, n2) << "the norm must not depend on the thread count";
}

TEST(GradNorm, NonFiniteGradientsGiveANonFiniteNorm) {
  Tensor g = random_tensor({1000}, DType::f32, 5);
  g.data<float>()[777] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(global_grad_norm(params_with_grads({g}))));
  g.data<float>()[777] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(std::isfinite(global_grad_norm(params_with_grads({g}))));
}

TEST(GradNorm, ClipCoefficientIsTorchs) {
  EXPECT_DOUBLE_EQ(clip_coefficient(10.0, 1.0), 1.0 / (10.0 + 1e-6));
  EXPECT_DOUBLE_EQ(clip_coefficient(0.5, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(clip_coefficient(1e9, 0.0), 1.0);  // 0: clipping off
}

TEST(GradNorm, AdamGradScaleEqualsScaledGradients) {
  const Tensor g = random_tensor({4099}, DType::f32, 6);
  const float s = 0.0371f;
  Tensor scaled = g.clone();
  for (int64_t i = 0; i < scaled.numel(); ++i) scaled.data<float>()[i] *= s;
  auto a = params_with_grads({g});
  auto b = params_with_grads({scaled});
  Adam adam_a(a, {}), adam_b(b, {});
  for (int step = 0; step < 3; ++step) {
    adam_a.step(1e-3, s);
    adam_b.step(1e-3);
  }
  EXPECT_TRUE(testing::bitwise_equal(a[0].second, b[0].second));
}

}  // namespace
}  // namespace tfm
