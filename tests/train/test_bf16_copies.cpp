// The optimiser's bf16 weight copies (Adam::keep_bf16_copies): each copy is the bf16 rounding of
// its parameter after every step, resume and refresh; bf16 training that multiplies them is bit
// for bit the training that rounds the weights at every call; linear() really reads them; and
// they are dropped with the optimiser that kept them.
#include <gtest/gtest.h>

#include <cstring>

#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/autograd_meta.h"
#include "tfm/model/transformer.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/cross_entropy.h"
#include "tfm/train/optimizer.h"

namespace tfm {
namespace {

using testing::bitwise_equal;
using testing::random_tensor;

using Params = std::vector<std::pair<std::string, Tensor>>;

Params params_of(const Transformer& m) {
  Params out;
  for (const auto& [name, p] : m.named_parameters()) out.emplace_back(name, *p);
  return out;
}

// Every parameter's copy holds cpu::to_bf16 of its current values.
::testing::AssertionResult copies_are_current(const Params& params) {
  for (const auto& [name, p] : params) {
    const AutogradMeta& m = *p.autograd_meta();
    if (!m.bf16_copy.defined()) return ::testing::AssertionFailure() << name << " has no copy";
    if (m.bf16_copy.shape() != p.shape() || m.bf16_copy.dtype() != DType::bf16)
      return ::testing::AssertionFailure() << name << ": copy " << m.bf16_copy.describe();
    const auto* c = static_cast<const uint16_t*>(m.bf16_copy.raw_data());
    const float* v = p.data<float>();
    for (int64_t i = 0; i < p.numel(); ++i)
      if (c[i] != cpu::to_bf16(v[i]))
        return ::testing::AssertionFailure() << name << "[" << i << "] copy is stale";
  }
  return ::testing::AssertionSuccess();
}

TEST(Bf16Copies, AreTheRoundingsOfTheParametersAfterEveryStepResumeAndRefresh) {
  const std::vector<int64_t> sizes = {1, 4097, 3, 70000};
  Params ps;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Tensor p = random_tensor({sizes[k]}, DType::f32, 30 + k);
    p.set_requires_grad(true);
    ps.emplace_back("p" + std::to_string(k), p);
  }
  Adam adam(ps, {});
  EXPECT_FALSE(adam.keeps_bf16_copies());
  EXPECT_FALSE(ps[0].second.autograd_meta()->bf16_copy.defined());
  adam.keep_bf16_copies();
  EXPECT_TRUE(copies_are_current(ps));
  for (int64_t step = 1; step <= 3; ++step) {
    for (size_t k = 0; k < sizes.size(); ++k) {
      if (k == 2 && step == 2) continue;  // no gradient: neither it nor its copy moves
      autograd::accumulate(*ps[k].second.autograd_meta(),
                           random_tensor({sizes[k]}, DType::f32, 100 * step + k));
    }
    adam.step(1e-2);
    adam.zero_grad();
    EXPECT_TRUE(copies_are_current(ps)) << "after step " << step;
  }
  // Written outside the optimiser: stale until refreshed (resume refreshes through load_state).
  ps[1].second.detach().copy_(random_tensor({sizes[1]}, DType::f32, 7));
  EXPECT_FALSE(copies_are_current(ps));
  adam.refresh_bf16_copies();
  EXPECT_TRUE(copies_are_current(ps));
  ps[3].second.detach().copy_(random_tensor({sizes[3]}, DType::f32, 8));
  adam.load_state(adam.state(), adam.steps());
  EXPECT_TRUE(copies_are_current(ps));
}

ModelConfig tiny_config() {
  ModelConfig c = ModelConfig::preset("tiny");
  c.src_vocab_size = c.trg_vocab_size = 37;
  c.dropout = c.attention_dropout = 0.0;
  return c;
}

Tensor ids(int64_t b, int64_t l, uint64_t seed) {
  Tensor t = testing::random_ids({b, l}, 30, seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int32_t>()[i] += 4;
  return t;
}

Tensor loss_of(const Transformer& m, uint64_t seed) {
  return softmax_cross_entropy(m.forward(ids(3, 7, seed), ids(3, 5, seed + 10)),
                               ids(3, 5, seed + 20), 0.1, 0)
      .loss;
}

TEST(Bf16Copies, TrainingOnThemIsBitForBitTrainingWithout) {
  Transformer with(tiny_config(), 3), without(tiny_config(), 3);
  with.set_train_compute(ComputeType::bfloat16);
  without.set_train_compute(ComputeType::bfloat16);
  Adam a(params_of(with), {}), b(params_of(without), {});
  a.keep_bf16_copies();
  for (uint64_t step = 1; step <= 4; ++step) {
    // One tape: each loss's backward before the next forward.
    const Tensor la = loss_of(with, step);
    autograd::backward(la);
    const Tensor lb = loss_of(without, step);
    autograd::backward(lb);
    EXPECT_TRUE(bitwise_equal(la, lb)) << "loss at step " << step;
    a.step(3e-3);
    b.step(3e-3);
    a.zero_grad();
    b.zero_grad();
  }
  const Params pa = params_of(with), pb = params_of(without);
  for (size_t k = 0; k < pa.size(); ++k)
    EXPECT_TRUE(bitwise_equal(pa[k].second, pb[k].second)) << pa[k].first;
  EXPECT_TRUE(copies_are_current(pa));

  // The forward reads the copies: spoil one and the loss moves; refresh and it is back.
  const Tensor before = loss_of(with, 9);
  Tensor w;
  for (const auto& [name, p] : with.named_parameters())
    if (name.find("q_proj.weight") != std::string::npos) {
      w = *p;
      break;
    }
  ASSERT_TRUE(w.defined());
  std::memset(w.autograd_meta()->bf16_copy.raw_data(), 0, w.autograd_meta()->bf16_copy.nbytes());
  EXPECT_FALSE(bitwise_equal(loss_of(with, 9), before));
  a.refresh_bf16_copies();
  EXPECT_TRUE(bitwise_equal(loss_of(with, 9), before));
}

TEST(Bf16Copies, GoWithTheOptimiserThatKeptThem) {
  Tensor p = random_tensor({5, 4}, DType::f32, 40);
  p.set_requires_grad(true);
  {
    Adam first({{"p", p}}, {});
    first.keep_bf16_copies();
    EXPECT_TRUE(p.autograd_meta()->bf16_copy.defined());
  }
  EXPECT_FALSE(p.autograd_meta()->bf16_copy.defined());
  Adam keeping({{"p", p}}, {});
  keeping.keep_bf16_copies();
  Adam later({{"p", p}}, {});  // takes the parameter over, keeps no copies: none are left behind
  EXPECT_FALSE(p.autograd_meta()->bf16_copy.defined());
}

}  // namespace
}  // namespace tfm
