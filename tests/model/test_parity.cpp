// The C++ model against PyTorch (tools/make_reference.py, float64): logits, every parameter
// gradient of the label-smoothed loss, per-sentence scores and a 10-step Adam trajectory, for
// every variant under tests/fixtures/; and converted PyTorch checkpoints scored as PyTorch does.
#include <fstream>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/data/vocab.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/safetensors.h"
#include "tfm/model/score.h"
#include "tfm/ops/cross_entropy.h"
#include "tfm/ops/shape.h"
#include "tfm/train/optimizer.h"

namespace tfm {
namespace {

const std::string kFixtures = TFM_FIXTURES_DIR;

struct Reference {
  SafetensorsFile file;
  Tensor src, trg_in, trg_out;
};

Reference load_reference(const std::string& dir) {
  Reference r{load_safetensors(dir + "/reference.safetensors"), {}, {}, {}};
  if (r.file.contains("src")) r.src = r.file.get("src");
  r.trg_in = r.file.get("trg_in");
  r.trg_out = r.file.get("trg_out");
  return r;
}

Tensor loss_of(const Transformer& m, const Reference& r) {
  Tensor logits = m.forward(r.src, r.trg_in);
  const int64_t n = r.trg_out.numel();
  return softmax_cross_entropy(reshape(logits, {n, m.config().trg_vocab_size}),
                               r.trg_out.reshape({n}), 0.1, m.config().pad_id)
      .loss;
}

// Strip padding and the EOS the conventions add, back to what `tfm score` reads.
std::vector<Ids> sequences(const Tensor& t, int64_t pad, int64_t eos, bool strip_eos) {
  std::vector<Ids> out;
  for (int64_t b = 0; b < t.size(0); ++b) {
    Ids ids;
    for (int64_t i = 0; i < t.size(1); ++i) {
      const int32_t v = static_cast<int32_t>(t.at({b, i}));
      if (v == pad || (strip_eos && v == eos)) break;
      ids.push_back(v);
    }
    out.push_back(ids);
  }
  return out;
}

class Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Parity, LogitsGradientsScoresAndTraining) {
  const std::string dir = kFixtures + "/" + GetParam();
  auto model = load_model(dir);
  const ModelConfig& c = model->config();
  Reference r = load_reference(dir);

  // Logits at every position (pad queries attend to the real keys in both implementations).
  {
    NoGradGuard ng;
    Tensor logits = model->forward(r.src, r.trg_in);
    const double err = testing::scaled_error(logits, r.file.get("logits"));
    EXPECT_LE(err, 1e-5) << "logits";
    std::printf("[ parity   ] %s logits error %.2e\n", GetParam().c_str(), err);
  }
  // Every parameter's gradient, relative to its own scale; but a gradient that is zero in exact
  // arithmetic (the key projection's bias: softmax ignores a constant added to a row of scores)
  // is float noise in both, so its scale is floored at 1e-3 of the largest gradient anywhere.
  Tensor loss = loss_of(*model, r);
  autograd::backward(loss);
  double model_scale = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(r.file.contains("grad." + name)) << name;
    model_scale = std::max(
        model_scale, testing::max_abs_diff(r.file.get("grad." + name), Tensor::zeros(p->shape())));
  }
  int checked = 0;
  double worst_grad = 0;
  for (const auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(p->grad().defined()) << "no gradient reached " << name;
    const Tensor& want = r.file.get("grad." + name);
    const double scale =
        std::max(testing::max_abs_diff(want, Tensor::zeros(p->shape())), 1e-3 * model_scale);
    const double err = testing::max_abs_diff(p->grad(), want) / scale;
    EXPECT_LE(err, 1e-4) << name;
    worst_grad = std::max(worst_grad, err);
    ++checked;
  }
  std::printf("[ parity   ] %s worst gradient error %.2e over %d parameters\n", GetParam().c_str(),
              worst_grad, checked);
  EXPECT_GT(checked, 10);
  // Scores as `tfm score` computes them.
  {
    std::vector<Ids> src =
        c.has_encoder() ? sequences(r.src, c.pad_id, c.eos_id, true) : std::vector<Ids>{};
    std::vector<Ids> trg = sequences(r.trg_out, c.pad_id, c.eos_id, true);
    std::vector<double> got = score_pairs(*model, src, trg, 2);
    std::vector<double> want = r.file.get("scores").to_vector<double>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::abs(want[i]))) << "sentence " << i;
  }
  // Ten Adam steps on the same batch.
  for (auto& [n, p] : model->named_parameters()) p->zero_grad();
  std::vector<std::pair<std::string, Tensor>> params;
  for (const auto& [n, p] : model->named_parameters()) params.emplace_back(n, *p);
  Adam adam(params, AdamOptions{1e-3, 0.9, 0.98, 1e-9, 0.0, false});
  std::vector<double> want = r.file.get("loss_trajectory").to_vector<double>();
  double worst_step = 0;
  for (size_t step = 0; step < want.size(); ++step) {
    Tensor l = loss_of(*model, r);
    EXPECT_NEAR(l.item(), want[step], 1e-4 * std::max(1.0, std::abs(want[step])))
        << "step " << step;
    worst_step = std::max(worst_step, std::abs(l.item() - want[step]));
    autograd::backward(l);
    adam.step(1e-3);
    adam.zero_grad();
  }
  std::printf("[ parity   ] %s 10-step Adam loss trajectory: worst |diff| %.2e\n",
              GetParam().c_str(), worst_step);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Parity,
                         ::testing::Values("post_sin_untied", "pre_learned_tied_gelu",
                                           "post_concat_shared_final", "pre_sin_shared_tied_prj",
                                           "odd_width_concat", "decoder_only_odd",
                                           "post_learned_nobias", "seed004", "seed000",
                                           "torch_nn"));

std::vector<Ids> read_id_lines(const std::string& path, int64_t vocab) {
  std::ifstream in(path);
  std::vector<Ids> out;
  for (std::string line; std::getline(in, line);) out.push_back(parse_ids(line, vocab, path));
  return out;
}

class Converted : public ::testing::TestWithParam<std::string> {};

TEST_P(Converted, ScoresEqualPyTorch) {
  const std::string dir = kFixtures + "/convert/" + GetParam();
  auto model = load_model(dir);
  const ModelConfig& c = model->config();
  std::vector<Ids> src = read_id_lines(dir + "/src.ids", c.src_vocab_size);
  std::vector<Ids> trg = read_id_lines(dir + "/trg.ids", c.trg_vocab_size);
  std::ifstream in(dir + "/expected_scores.txt");
  std::vector<double> want;
  for (double v; in >> v;) want.push_back(v);
  ASSERT_EQ(want.size(), trg.size());
  std::vector<double> got = score_pairs(*model, src, trg, 4);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::abs(want[i]))) << "line " << i + 1;
}

// seed004 twice: the layout's source framing [BOS] x [EOS], and --no-source-eos ([BOS] x).
INSTANTIATE_TEST_SUITE_P(Layouts, Converted,
                         ::testing::Values("seed004", "seed004-no-source-eos", "seed000",
                                           "torch-nn"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace tfm
