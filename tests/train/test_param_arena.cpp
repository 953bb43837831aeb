// The parameter and gradient arenas (train/param_arena.h): parameters moved into one aligned
// block with their values, gradients accumulated in the second block bit for bit as without it
// (ops writing a parameter's first contribution straight into its slot), zero_grad, Adam as one
// pass (the same numbers as per parameter) and the flat-buffer norm.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/model/transformer.h"
#include "tfm/ops/cross_entropy.h"
#include "tfm/ops/layer_norm.h"
#include "tfm/ops/reduce.h"
#include "tfm/train/grad_norm.h"
#include "tfm/train/optimizer.h"
#include "tfm/train/param_arena.h"

namespace tfm {
namespace {

using testing::bitwise_equal;
using testing::random_tensor;

using Params = std::vector<std::pair<std::string, Tensor>>;

ModelConfig tiny_config() {
  ModelConfig c = ModelConfig::preset("tiny");
  c.src_vocab_size = c.trg_vocab_size = 37;
  c.dropout = 0.0;
  return c;
}

Params params_of(const Transformer& m) {
  Params out;
  for (const auto& [name, p] : m.named_parameters()) out.emplace_back(name, *p);
  return out;
}

// Sum over two batches of the label-smoothed loss's gradients (tied output weight: the target
// table gets two contributions a batch, four in all).
void two_backwards(const Transformer& m) {
  for (uint64_t seed : {1, 2}) {
    Tensor src = testing::random_ids({3, 7}, 30, seed),
           trg_in = testing::random_ids({3, 5}, 30, seed + 10);
    Tensor trg_out = testing::random_ids({3, 5}, 30, seed + 20);
    for (Tensor* t : {&src, &trg_in, &trg_out})
      for (int64_t i = 0; i < t->numel(); ++i) t->data<int32_t>()[i] += 4;
    CrossEntropyResult ce = softmax_cross_entropy(m.forward(src, trg_in), trg_out, 0.1, 0);
    autograd::backward(ce.loss, Tensor::full({}, 3.0));
  }
}

TEST(ParameterArena, MovesEveryParameterIntoOneAlignedBlockWithItsValues) {
  Transformer m(tiny_config(), 3);
  std::map<std::string, Tensor> before;
  for (const auto& [name, p] : m.named_parameters()) before[name] = p->clone();
  ParameterArena arena(params_of(m));
  ASSERT_EQ(arena.slots().size(), before.size());
  int64_t next = 0;
  size_t k = 0;
  for (const auto& [name, p] : m.named_parameters()) {  // the module's own members
    const ArenaSlot& s = arena.slots()[k++];
    EXPECT_EQ(s.name, name);  // registration order
    EXPECT_EQ(s.offset % ParameterArena::kAlignment, 0) << name;
    EXPECT_GE(s.offset, next) << name;
    EXPECT_LT(s.offset, next + ParameterArena::kAlignment) << name;
    next = s.offset + s.numel;
    EXPECT_EQ(p->raw_data(), static_cast<void*>(arena.params().data<float>() + s.offset)) << name;
    EXPECT_TRUE(bitwise_equal(*p, before[name])) << name;
    EXPECT_EQ(&arena.slot(name), &s);
  }
  EXPECT_GE(arena.size(), next);
  EXPECT_LT(arena.size(), next + ParameterArena::kAlignment);
  EXPECT_TFM_ERROR(arena.slot("nope"), "no parameter nope");
}

TEST(ParameterArena, GradientsAccumulateInTheArenaBitForBit) {
  for (ComputeType t : {ComputeType::float32, ComputeType::bfloat16}) {
    SCOPED_TRACE(compute_type_name(t));
    Transformer plain(tiny_config(), 5), flat(tiny_config(), 5);
    plain.set_train_compute(t);
    flat.set_train_compute(t);
    ParameterArena arena(params_of(flat));
    two_backwards(plain);
    two_backwards(flat);
    const auto pp = plain.named_parameters(), fp = flat.named_parameters();
    ASSERT_EQ(pp.size(), fp.size());
    for (size_t k = 0; k < pp.size(); ++k) {
      const Tensor g = fp[k].second->grad();
      ASSERT_TRUE(g.defined()) << fp[k].first;
      EXPECT_EQ(g.storage(), arena.grads().storage()) << fp[k].first;
      EXPECT_EQ(g.raw_data(),
                static_cast<void*>(arena.grads().data<float>() + arena.slots()[k].offset));
      EXPECT_TRUE(bitwise_equal(g, pp[k].second->grad())) << fp[k].first;
    }
    for (auto& [name, p] : plain.named_parameters()) p->zero_grad();
  }
}

TEST(ParameterArena, ZeroGradClearsTheFlatBufferAndItHoldsEveryGradient) {
  Transformer m(tiny_config(), 7);
  ParameterArena arena(params_of(m));
  two_backwards(m);
  std::vector<char> in_slot(arena.size(), 0);
  size_t k = 0;
  for (const auto& [name, p] : m.named_parameters()) {
    const ArenaSlot& s = arena.slots()[k];
    EXPECT_TRUE(arena.has_grad(k++));
    const Tensor flat = arena.grads().slice(s.offset, s.offset + s.numel).reshape(s.shape);
    EXPECT_TRUE(bitwise_equal(flat, p->grad())) << name;
    for (int64_t i = s.offset; i < s.offset + s.numel; ++i) in_slot[i] = 1;
  }
  const float* g = arena.grads().data<float>();
  for (int64_t i = 0; i < arena.size(); ++i) {
    if (!in_slot[i]) {
      ASSERT_EQ(g[i], 0.0f) << "gap element " << i;
    }
  }
  arena.zero_grad();
  for (int64_t i = 0; i < arena.size(); ++i) ASSERT_EQ(g[i], 0.0f) << i;
  for (k = 0; k < arena.slots().size(); ++k) EXPECT_FALSE(arena.has_grad(k));
  for (const auto& [name, p] : m.named_parameters()) EXPECT_FALSE(p->grad().defined()) << name;
  // A tensor's own zero_grad keeps its slot zero too, and the next backward starts from zero.
  two_backwards(m);
  const Tensor first = m.named_parameters()[0].second->grad().clone();
  for (const auto& [name, p] : m.named_parameters()) p->zero_grad();
  for (int64_t i = 0; i < arena.size(); ++i) ASSERT_EQ(g[i], 0.0f) << i;
  two_backwards(m);
  EXPECT_TRUE(bitwise_equal(m.named_parameters()[0].second->grad(), first));
}

// The same parameter as two inputs of one op: its slot is lent to one of them only, and the two
// contributions add up as they do without an arena.
TEST(ParameterArena, AParameterUsedTwiceByOneOpGetsBothContributions) {
  auto run = [](bool with_arena) {
    Tensor x = random_tensor({4, 6}, DType::f32, 11);
    Tensor p = random_tensor({6}, DType::f32, 12);
    p.set_requires_grad(true);
    std::unique_ptr<ParameterArena> arena;
    if (with_arena) arena = std::make_unique<ParameterArena>(Params{{"p", p}});
    Tensor y = layer_norm(x, p, p, 1e-5);  // gamma and beta are one tensor
    autograd::backward(y, random_tensor({4, 6}, DType::f32, 13));
    return p.grad().clone();
  };
  EXPECT_TRUE(bitwise_equal(run(true), run(false)));
}

// The update one parameter at a time, as before the arenas (with the multiply-adds the compiler
// fused there written out, as optimizer.cpp does), for comparison.
void reference_adam(Params& params, std::vector<Tensor>& m, std::vector<Tensor>& v, int64_t step,
                    const AdamOptions& o, double lr, double grad_scale) {
  const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  const float step_size = static_cast<float>(lr / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float b1 = static_cast<float>(o.beta1), b2 = static_cast<float>(o.beta2);
  const float eps = static_cast<float>(o.eps), wd = static_cast<float>(o.weight_decay);
  const float gs = static_cast<float>(grad_scale);
  const float decay = o.decoupled ? static_cast<float>(1.0 - lr * o.weight_decay) : 1.0f;
  const bool coupled_wd = !o.decoupled && wd != 0.0f;
  for (size_t k = 0; k < params.size(); ++k) {
    const Tensor gt = params[k].second.grad();
    if (!gt.defined()) continue;
    float* p = params[k].second.data<float>();
    const float* g = gt.data<float>();
    float* mk = m[k].data<float>();
    float* vk = v[k].data<float>();
    for (int64_t i = 0; i < gt.numel(); ++i) {
      const float gg = g[i] * gs;
      const float gi = coupled_wd ? std::fma(wd, p[i], gg) : gg;
      mk[i] = std::fma(b1, mk[i], (1.0f - b1) * gi);
      vk[i] = std::fma(b2, vk[i], (1.0f - b2) * gi * gi);
      const float denom = std::fma(std::sqrt(vk[i]), inv_sqrt_bc2, eps);
      p[i] = std::fma(p[i], decay, -(step_size * mk[i] / denom));
    }
  }
}

TEST(ParameterArena, AdamInOnePassIsThePerParameterUpdate) {
  const std::vector<int64_t> sizes = {1, 4095, 4096, 4097, 100000, 0, 3, 70000};
  for (bool decoupled : {false, true}) {
    AdamOptions o;
    o.weight_decay = 0.01;
    o.decoupled = decoupled;
    Params a, b;
    std::vector<Tensor> m, v;
    for (size_t k = 0; k < sizes.size(); ++k) {
      Tensor p = random_tensor({sizes[k]}, DType::f32, 30 + k);
      Tensor q = p.clone();
      p.set_requires_grad(true);
      q.set_requires_grad(true);
      a.emplace_back("p" + std::to_string(k), p);
      b.emplace_back("p" + std::to_string(k), q);
      m.push_back(Tensor::zeros({sizes[k]}));
      v.push_back(Tensor::zeros({sizes[k]}));
    }
    Adam adam(a, o);
    for (int64_t step = 1; step <= 3; ++step) {
      for (size_t k = 0; k < sizes.size(); ++k) {
        if (k == 2 && step == 2) continue;  // no gradient: left alone this step
        const Tensor g = random_tensor({sizes[k]}, DType::f32, 100 * step + k);
        autograd::accumulate(*a[k].second.autograd_meta(), g.clone());
        autograd::accumulate(*b[k].second.autograd_meta(), g.clone());
      }
      const double n_a = testing::with_threads(2, [&] { return global_grad_norm(a); });
      EXPECT_EQ(n_a, global_grad_norm(b)) << "the norm of the arena's gradients";
      EXPECT_EQ(global_grad_norm(adam.arena()), n_a) << "the flat buffer's norm";
      testing::with_threads(2, [&] {
        adam.step(1e-2 * step, 0.7);
        return 0;
      });
      reference_adam(b, m, v, step, o, 1e-2 * step, 0.7);
      adam.zero_grad();
      for (auto& [name, q] : b) q.zero_grad();
    }
    const auto state = adam.state();
    for (size_t k = 0; k < sizes.size(); ++k) {
      EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
      EXPECT_TRUE(bitwise_equal(state[2 * k].second, m[k])) << a[k].first;
      EXPECT_TRUE(bitwise_equal(state[2 * k + 1].second, v[k])) << a[k].first;
    }
  }
}

TEST(ParameterArena, ANewerArenaTakesTheParametersOver) {
  Tensor p = random_tensor({5}, DType::f32, 40);
  p.set_requires_grad(true);
  Adam first({{"p", p}}, {});
  Adam second({{"p", p}}, {});
  autograd::accumulate(*p.autograd_meta(), Tensor::ones({5}));
  second.step(1e-3);
  EXPECT_TFM_ERROR(first.step(1e-3), "has moved out of this arena");
}

TEST(ParameterArena, RefusesWhatItCannotMove) {
  Tensor whole = random_tensor({4, 3}, DType::f32, 41);
  Tensor row = whole.slice(1, 2);
  row.set_requires_grad(true);
  EXPECT_TFM_ERROR(ParameterArena({{"row", row}}), "is a view into a larger block");
  Tensor d = random_tensor({3}, DType::f64, 42);
  d.set_requires_grad(true);
  EXPECT_TFM_ERROR(ParameterArena({{"d", d}}), "must be a contiguous f32 tensor");
  Tensor n = random_tensor({3}, DType::f32, 43);
  EXPECT_TFM_ERROR(ParameterArena({{"n", n}}), "does not require grad");
  n.set_requires_grad(true);
  EXPECT_TFM_ERROR(ParameterArena({{"n", n}, {"n", n}}), "parameter n twice");
  EXPECT_TFM_ERROR(ParameterArena({{"a", n}, {"b", n}}), "shares its storage");
}

}  // namespace
}  // namespace tfm
