// Transformer::set_train_compute(bf16): every linear layer and the output projection run their
// training GEMMs in bf16, so the loss and every gradient move by bf16 rounding (not more), and
// inference, the parameters and checkpoints are untouched.
#include <algorithm>
#include <cmath>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/model/transformer.h"
#include "tfm/nn/linear.h"
#include "tfm/ops/cross_entropy.h"

namespace tfm {
namespace {

ModelConfig config(bool tied) {
  ModelConfig c = ModelConfig::preset("tiny");
  c.d_model = 64, c.heads = 4, c.d_ff = 128, c.encoder_layers = 2, c.decoder_layers = 2;
  c.dropout = 0.0;
  c.src_vocab_size = c.trg_vocab_size = 97;
  c.share_embeddings = tied;
  c.tie_output = tied;
  c.output_bias = !tied;
  return c;
}

struct Step {
  double loss = 0;
  std::vector<std::pair<std::string, std::vector<float>>> grads;
};

Step loss_and_grads(Transformer& m, const Tensor& src, const Tensor& trg_in, const Tensor& gold) {
  m.set_training(true);
  for (auto& [name, p] : m.named_parameters()) p->zero_grad();
  CrossEntropyResult r = softmax_cross_entropy(m.forward(src, trg_in), gold, 0.1);
  autograd::backward(r.loss);
  Step s;
  s.loss = r.loss.item();
  for (auto& [name, p] : m.named_parameters())
    s.grads.emplace_back(name, p->grad().to_vector<float>());
  return s;
}

TEST(TrainPrecision, Bf16GradientsAreFp32sUpToRounding) {
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied output" : "separate output");
    Transformer m(config(tied), 5);
    const Tensor src = testing::random_ids({6, 9}, 97, 1);
    const Tensor trg_in = testing::random_ids({6, 7}, 97, 2);
    const Tensor gold = testing::random_ids({6, 7}, 97, 3);
    const Step f32 = loss_and_grads(m, src, trg_in, gold);
    m.set_train_compute(ComputeType::bfloat16);
    EXPECT_EQ(m.train_compute(), ComputeType::bfloat16);
    // Every linear of the module tree, found by a walk that tests types (the model's own list
    // must hold exactly these).
    int linears = 0;
    m.apply([&](nn::Module& mod) {
      if (auto* l = dynamic_cast<nn::Linear*>(&mod)) {
        ++linears;
        EXPECT_EQ(l->kernel().train_compute(), ComputeType::bfloat16);
      }
    });
    EXPECT_EQ(linears, 2 * 6 + 2 * 10);  // attention q/k/v/out and fc1/fc2 of every layer
    EXPECT_EQ(m.linear_layers().size(), static_cast<size_t>(linears));
    const Step b16 = loss_and_grads(m, src, trg_in, gold);

    // The loss moves (the GEMMs really ran in bf16) by no more than rounding would.
    EXPECT_NE(b16.loss, f32.loss);
    EXPECT_NEAR(b16.loss, f32.loss, 1e-2 * f32.loss);
    // Each parameter's gradient: relative L2 error within what bf16 rounding of every GEMM
    // operand, compounded over 2 + 2 layers forward and backward, gives (~2⁻⁸ a GEMM; 1.5–4.7 %
    // seen). Gradients that are zero in exact arithmetic are skipped: k_proj.bias (softmax does
    // not see a shift shared by every key), whose fp32 value is rounding noise.
    std::vector<double> norms;
    for (const auto& [name, g] : f32.grads) {
      double n = 0;
      for (float v : g) n += static_cast<double>(v) * v;
      norms.push_back(std::sqrt(n));
    }
    std::vector<double> sorted = norms;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    ASSERT_EQ(b16.grads.size(), f32.grads.size());
    int compared = 0;
    for (size_t k = 0; k < f32.grads.size(); ++k) {
      if (norms[k] < 1e-4 * median) {
        EXPECT_NE(f32.grads[k].first.find("k_proj.bias"), std::string::npos)
            << f32.grads[k].first << " has a vanishing gradient";
        continue;
      }
      const auto& a = b16.grads[k].second;
      const auto& b = f32.grads[k].second;
      double diff = 0;
      for (size_t i = 0; i < b.size(); ++i)
        diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
      EXPECT_LT(std::sqrt(diff) / norms[k], 0.08) << f32.grads[k].first;
      EXPECT_GT(diff, 0) << f32.grads[k].first << ": bitwise fp32's, so not bf16";
      ++compared;
    }
    EXPECT_GE(compared, static_cast<int>(f32.grads.size()) - 6);  // all but the 6 k biases

    // Back to fp32: exactly the first step again (nothing cached from the bf16 run).
    m.set_train_compute(ComputeType::float32);
    const Step again = loss_and_grads(m, src, trg_in, gold);
    EXPECT_EQ(again.loss, f32.loss);
    for (size_t k = 0; k < f32.grads.size(); ++k)
      EXPECT_EQ(again.grads[k].second, f32.grads[k].second) << f32.grads[k].first;
  }
}

TEST(TrainPrecision, InferenceIgnoresTheTrainingPrecision) {
  Transformer m(config(true), 9);
  m.set_training(false);
  NoGradGuard no_grad;  // inference: parameters need no gradient here
  const Tensor src = testing::random_ids({3, 8}, 97, 4);
  const Tensor trg_in = testing::random_ids({3, 5}, 97, 5);
  const Tensor before = m.forward(src, trg_in);
  m.set_train_compute(ComputeType::bfloat16);
  EXPECT_TRUE(testing::bitwise_equal(m.forward(src, trg_in), before));
}

}  // namespace
}  // namespace tfm
