// A training step in steady state (forward with dropout, label-smoothed loss, backward, Adam)
// takes every tensor from the caching allocator's free lists: nothing reaches the system
// allocator after the first steps, and the memory in use returns to the same level each step.
#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/allocator.h"
#include "tfm/model/transformer.h"
#include "tfm/ops/cross_entropy.h"
#include "tfm/train/optimizer.h"

namespace tfm {
namespace {

// fp32, and bf16 mixed precision (its bf16 copies of x, w and dz come from the same free lists).
class SteadyStateMemory : public ::testing::TestWithParam<ComputeType> {};

TEST_P(SteadyStateMemory, TrainingStepsTakeNoNewMemory) {
  ModelConfig c = ModelConfig::preset("tiny");
  c.src_vocab_size = c.trg_vocab_size = 37;
  c.dropout = 0.1;
  Transformer m(c, 2);
  m.set_training(true);
  m.set_train_compute(GetParam());
  Tensor src = testing::random_ids({6, 9}, 30, 1), trg_in = testing::random_ids({6, 7}, 30, 2);
  Tensor trg_out = testing::random_ids({6, 7}, 30, 3);
  for (Tensor* t : {&src, &trg_in, &trg_out})
    for (int64_t i = 0; i < t->numel(); ++i) t->data<int32_t>()[i] += 4;
  std::vector<std::pair<std::string, Tensor>> params;
  for (const auto& [n, p] : m.named_parameters()) params.emplace_back(n, *p);
  Adam adam(params, AdamOptions{});
  uint64_t allocs = 0;
  size_t in_use = 0;
  for (int step = 0; step < 6; ++step) {
    if (step == 3) {
      allocs = cpu_allocator().stats().system_allocs;
      in_use = cpu_allocator().stats().in_use_bytes;
    }
    CrossEntropyResult ce = softmax_cross_entropy(m.forward(src, trg_in), trg_out, 0.1, 0);
    autograd::backward(ce.loss);
    adam.step(1e-3);
    adam.zero_grad();
  }
  EXPECT_EQ(cpu_allocator().stats().system_allocs, allocs);
  EXPECT_EQ(cpu_allocator().stats().in_use_bytes, in_use);
}

INSTANTIATE_TEST_SUITE_P(Precisions, SteadyStateMemory,
                         ::testing::Values(ComputeType::float32, ComputeType::bfloat16),
                         [](const auto& info) { return compute_type_name(info.param); });

}  // namespace
}  // namespace tfm
