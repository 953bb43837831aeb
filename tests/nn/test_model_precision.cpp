// A whole model in bf16/int8 against itself in fp32: logits within a bound, training untouched,
// and (on a model trained here on a copying task) the same greedy translations.
#include <random>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/data/batch.h"
#include "tfm/decode/search.h"
#include "tfm/model/transformer.h"
#include "tfm/ops/cpu/packed_int8_cpu.h"
#include "tfm/ops/cross_entropy.h"
#include "tfm/ops/shape.h"
#include "tfm/train/optimizer.h"

namespace tfm {
namespace {

ModelConfig tiny_config() {
  ModelConfig c = ModelConfig::preset("tiny");
  c.src_vocab_size = c.trg_vocab_size = 20;
  c.dropout = 0.0;
  c.max_length = 64;
  return c;
}

std::vector<Ids> random_sentences(int64_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Ids> out(n);
  for (auto& s : out) {
    s.resize(3 + rng() % 6);
    for (auto& t : s) t = static_cast<int32_t>(3 + rng() % (vocab - 3));
  }
  return out;
}

Batch batch_of(const std::vector<Ids>& src, const std::vector<Ids>& trg, const ModelConfig& c) {
  std::vector<const Ids*> s, t;
  for (size_t i = 0; i < src.size(); ++i) s.push_back(&src[i]), t.push_back(&trg[i]);
  return make_batch(s, t, c.seq_format());
}

// max|Δ| / max|fp32| over the logits; the tiny model has d_model 32, d_ff 64.
double logits_error(Transformer& model, ComputeType p, const Batch& b) {
  NoGradGuard no_grad;
  model.unbind_inference();
  const Tensor ref = model.forward(b.src, b.trg_in);
  model.bind_inference(p);
  const Tensor low = model.forward(b.src, b.trg_in);
  model.unbind_inference();
  return testing::scaled_error(low, ref);
}

TEST(ModelPrecision, LogitsCloseToFp32AndTrainingStaysFp32) {
  for (bool tied : {true, false}) {
    SCOPED_TRACE(tied ? "tied output" : "untied output with bias");
    ModelConfig c = tiny_config();
    c.tie_output = !tied ? false : true;
    c.output_bias = !tied;
    Transformer model(c, 1);
    const auto src = random_sentences(6, 20, 2), trg = random_sentences(6, 20, 3);
    const Batch b = batch_of(src, trg, c);
    const double e_bf16 = logits_error(model, ComputeType::bfloat16, b);
    const double e_int8 = logits_error(model, ComputeType::int8, b);
    std::printf("[ precision] logits scaled error: bf16 %.2e int8 %.2e\n", e_bf16, e_int8);
    // bf16 rounds to 2^-9 relative per operand; ~12 linear maps deep that stays near 1e-2.
    EXPECT_GT(e_bf16, 0.0);
    EXPECT_LT(e_bf16, 2e-2);
    EXPECT_GT(e_int8, 0.0);
    EXPECT_LT(e_int8, 5e-2);

    // With gradients on, the model is the fp32 training model whatever it is bound to, and the
    // forward drops the bindings. (fp32 binding runs decoding-sized batches on the packed
    // kernel, whose summation order is its own: equal to the training path's only to rounding.)
    Tensor unbound_fp32, packed_fp32;
    {
      NoGradGuard no_grad;
      unbound_fp32 = model.forward(b.src, b.trg_in);
      model.bind_inference(ComputeType::float32);
      packed_fp32 = model.forward(b.src, b.trg_in);
    }
    const Tensor train_fp32 = model.forward(b.src, b.trg_in);
    EXPECT_TRUE(testing::bitwise_equal(train_fp32, unbound_fp32));
    EXPECT_LT(testing::scaled_error(packed_fp32, train_fp32), 1e-5);
    model.bind_inference(ComputeType::int8);
    EXPECT_TRUE(testing::bitwise_equal(model.forward(b.src, b.trg_in), train_fp32));
    EXPECT_EQ(model.inference_compute(), ComputeType::float32);  // the forward unbound it
    NoGradGuard no_grad;
    EXPECT_TRUE(testing::bitwise_equal(model.forward(b.src, b.trg_in), unbound_fp32));
  }
}

TEST(ModelPrecision, OutputProjectionCanStayAtAnotherPrecision) {
  ModelConfig c = tiny_config();
  Transformer model(c, 4);
  const Batch b = batch_of(random_sentences(4, 20, 5), random_sentences(4, 20, 6), c);
  NoGradGuard no_grad;
  model.bind_inference(ComputeType::int8);
  const Tensor all_int8 = model.forward(b.src, b.trg_in);
  model.bind_inference(ComputeType::int8, ComputeType::float32);
  EXPECT_EQ(model.output_kernel().inference_compute(), ComputeType::float32);
  const Tensor fp32_output = model.forward(b.src, b.trg_in);
  EXPECT_GT(testing::max_abs_diff(all_int8, fp32_output), 0.0);
  model.bind_inference(ComputeType::float32, ComputeType::float32);
  const Tensor fp32 = model.forward(b.src, b.trg_in);
  EXPECT_GT(testing::max_abs_diff(fp32_output, fp32), 0.0);  // the layers below were int8
}

// int8 lookups of a tied table read the output projection's quantised rows, q · scale (as
// CTranslate2's int8 embeddings do), whether the binding released the f32 table or not: the same
// logits as a model whose table holds those values itself (which quantise to the same q).
TEST(ModelPrecision, Int8LookupsOfATiedTableAreItsQuantisedRows) {
  {
    ModelConfig c = tiny_config();
    c.tie_output = c.share_embeddings = true;  // the encoder's lookups read the table too
    c.output_bias = false;
    const Batch b = batch_of(random_sentences(4, 20, 8), random_sentences(4, 20, 9), c);
    Transformer model(c, 7), dequantised(c, 7), released(c, 7);
    Tensor& table = *dequantised.weight_bindings(ComputeType::int8).back().weight;  // (V, C)
    const int64_t v = table.size(0), k = table.size(1);
    std::vector<int8_t> q(v * k);
    std::vector<float> scales(v);
    std::vector<int32_t> sums(v);
    cpu::quantize_weights_s8(v, k, table.data<float>(), q.data(), scales.data(), sums.data());
    float* t = table.data<float>();
    for (int64_t i = 0; i < v * k; ++i) t[i] = static_cast<float>(q[i]) * scales[i / k];
    NoGradGuard no_grad;
    const Tensor fp32 = model.forward(b.src, b.trg_in);
    model.bind_inference(ComputeType::int8);
    dequantised.bind_inference(ComputeType::int8);
    released.bind_inference(ComputeType::int8, std::nullopt, /*keep_f32=*/false);
    EXPECT_FALSE(released.weight_bindings(ComputeType::int8).back().weight->defined());
    const Tensor got = model.forward(b.src, b.trg_in);
    EXPECT_TRUE(testing::bitwise_equal(got, dequantised.forward(b.src, b.trg_in)));
    EXPECT_TRUE(testing::bitwise_equal(got, released.forward(b.src, b.trg_in)));
    EXPECT_LT(testing::scaled_error(got, fp32), 5e-2);
    // An fp32 output projection: lookups read the f32 table again.
    model.bind_inference(ComputeType::int8, ComputeType::float32);
    dequantised.bind_inference(ComputeType::int8, ComputeType::float32);
    EXPECT_GT(
        testing::max_abs_diff(model.forward(b.src, b.trg_in), dequantised.forward(b.src, b.trg_in)),
        0.0);
  }
}

// Trained to copy its input, the model is confident: lower precision must not change a single
// greedy output, and the weights updated by training are re-prepared, not served stale.
TEST(ModelPrecision, TrainedCopyModelTranslatesTheSameInEveryPrecision) {
  ModelConfig c = tiny_config();
  c.encoder_layers = c.decoder_layers = 1;
  Transformer model(c, 7);
  model.bind_inference(ComputeType::int8);  // bound before training: training drops it
  model.set_training(true);
  std::vector<std::pair<std::string, Tensor>> params;
  for (auto& [name, p] : model.named_parameters()) params.emplace_back(name, *p);
  Adam adam(params, AdamOptions{3e-3, 0.9, 0.98, 1e-9, 0.0, false});
  const std::vector<Ids> test = random_sentences(40, 20, 1000);
  const auto search = decode::make_search(decode::SearchOptions{});
  std::vector<decode::NBest> early;
  // One thread: a tiny model gains nothing from two, and on a loaded machine it runs far faster.
  // 2000 updates: after 1500 the model trained at the AVX-512 level (since the attention kernels'
  // odd-width sums were written out) still left one sentence uncopied, a near-tie that lower
  // precision broke the other way; 1800 to 2500 copy all 40 at both levels.
  testing::with_threads(1, [&] {
    for (int step = 0; step < 2000; ++step) {
      const auto src = random_sentences(32, 20, step);
      const Batch b = batch_of(src, src, c);
      Tensor logits = model.forward(b.src, b.trg_in);
      const int64_t n = b.trg_out.numel();
      Tensor loss = softmax_cross_entropy(reshape(logits, {n, c.trg_vocab_size}),
                                          b.trg_out.reshape({n}), 0.0, c.pad_id)
                        .loss;
      autograd::backward(loss);
      adam.step(step < 100 ? 3e-3 * (step + 1) / 100 : 3e-3);
      adam.zero_grad();
      // Mid-training inference binds int8 copies of the weights of the time; the next training
      // forward must drop them.
      if (step == 20) {
        model.bind_inference(ComputeType::int8);
        early = search->run(model, test);
      }
    }
  });
  model.set_training(false);
  // Training dropped the bindings; the int8 copies made at step 20 ran the early model.
  EXPECT_EQ(model.inference_compute(), ComputeType::float32);
  EXPECT_FALSE(model.output_kernel().bound());
  model.bind_inference(ComputeType::float32);
  const auto fp32 = search->run(model, test);
  int copied = 0;
  for (size_t i = 0; i < test.size(); ++i) copied += fp32[i][0].tokens == test[i];
  std::printf("[ precision] fp32 copies %d/%zu\n", copied, test.size());
  ASSERT_GE(copied, 38) << "the model did not learn to copy";
  // fp32 decoding runs its linear maps on packed weights; the training path's GEMMs must give
  // the same translations, greedy and beam, with log-probabilities equal to rounding.
  for (int64_t beam : {1, 4}) {
    decode::SearchOptions so;
    so.beam_size = beam;
    const auto fast = decode::make_search(so)->run(model, test);
    model.unbind_inference();
    const auto plain = decode::make_search(so)->run(model, test);
    model.bind_inference(ComputeType::float32);
    int same = 0;
    double worst = 0;
    for (size_t i = 0; i < test.size(); ++i) {
      same += fast[i][0].tokens == plain[i][0].tokens;
      worst = std::max(worst, std::abs(fast[i][0].log_prob - plain[i][0].log_prob));
    }
    std::printf("[ precision] fp32 packed vs plain, beam %ld: %d/%zu same, worst |Δ log P| %.2e\n",
                static_cast<long>(beam), same, test.size(), worst);
    EXPECT_EQ(same, static_cast<int>(test.size())) << "beam " << beam;
    EXPECT_LT(worst, 1e-4) << "beam " << beam;
  }
  // The last entry keeps the output projection (the vocabulary-sized one) at fp32.
  for (auto [p, out] : {std::pair{ComputeType::bfloat16, ComputeType::bfloat16},
                        std::pair{ComputeType::int8, ComputeType::int8},
                        std::pair{ComputeType::int8, ComputeType::bfloat16},
                        std::pair{ComputeType::int8, ComputeType::float32}}) {
    model.bind_inference(p, out);
    const auto low = search->run(model, test);
    int same = 0;
    double worst = 0;
    for (size_t i = 0; i < test.size(); ++i) {
      same += low[i][0].tokens == fp32[i][0].tokens;
      if (low[i][0].tokens == fp32[i][0].tokens)
        worst = std::max(worst, std::abs(low[i][0].log_prob - fp32[i][0].log_prob));
    }
    std::printf(
        "[ precision] %s (output %s): %d/%zu greedy outputs as fp32, worst |Δ log P| "
        "%.2e\n",
        compute_type_name(p), compute_type_name(out), same, test.size(), worst);
    EXPECT_EQ(same, static_cast<int>(test.size())) << compute_type_name(p);
    // A sentence's log P sums one log-probability per token (up to 12 here), each off by about
    // the logit error above. Measured worst (2000 updates): bf16 0.0014 with the model trained
    // at the AVX2 level, 0.0004 at AVX-512 (oneDNN's GEMMs sum in another order there: another
    // model); int8 0.001 to 0.007. After 1500 updates they were up to 0.03 and 0.1.
    EXPECT_LT(worst, p == ComputeType::bfloat16 ? 0.05 : 0.15);
  }
  // The stale int8 copies from step 20 would translate like the early model did.
  int as_early = 0;
  for (size_t i = 0; i < test.size(); ++i) as_early += early[i][0].tokens == fp32[i][0].tokens;
  EXPECT_LT(as_early, static_cast<int>(test.size()));
}

}  // namespace
}  // namespace tfm
