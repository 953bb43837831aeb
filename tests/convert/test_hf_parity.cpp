// Converted Hugging Face Transformers models against Transformers itself
// (tools/make_hf_fixtures.py: random-weight models of each family, trained a little, with what
// Transformers computes): teacher-forced log-probabilities within 1e-4 per token, and greedy
// and beam-4 generate() outputs token for token (beam scores within 1e-4), through the public
// convert_transformers and Translator.
#include <filesystem>
#include <fstream>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/convert.h"
#include "tfm/core/file_util.h"
#include "tfm/model/checkpoint.h"
#include "tfm/ops/host.h"
#include "tfm/ops/softmax.h"
#include "tfm/translator.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFixtures = std::string(TFM_FIXTURES_DIR) + "/hf";
const std::vector<std::string> kModels = {
    "marian_shared", "marian_separate", "m2m100",     "nllb", "bart",
    "bart_untied",   "mbart50",         "mbart_cc25", "gpt2", "gpt2_untied"};

json reference(const std::string& name) {
  return json::parse(read_file(kFixtures + "/" + name + "/reference.json"));
}

// A fresh directory under the system's temporary directory, removed at exit.
std::string temp_dir(const std::string& tag) {
  static int n = 0;
  const fs::path d = fs::temp_directory_path() /
                     ("tfm_hf_" + tag + "_" + std::to_string(getpid()) + "_" + std::to_string(n++));
  fs::remove_all(d);
  return d.string();
}

// The fixture converted once per process (fp32).
const std::string& converted(const std::string& name) {
  static std::map<std::string, std::string> dirs;
  auto it = dirs.find(name);
  if (it != dirs.end()) return it->second;
  const std::string out = temp_dir(name);
  convert_transformers(kFixtures + "/" + name + "/model", out);
  return dirs[name] = out;
}

std::vector<std::vector<int64_t>> id_lists(const json& j) {
  std::vector<std::vector<int64_t>> out;
  for (const json& x : j) out.push_back(x.get<std::vector<int64_t>>());
  return out;
}

// Rows of ids, pad-filled to the longest, as i32 (B, L).
Tensor padded(const std::vector<std::vector<int32_t>>& rows, int64_t pad) {
  size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.size());
  std::vector<int32_t> v(rows.size() * width, static_cast<int32_t>(pad));
  for (size_t i = 0; i < rows.size(); ++i) std::copy(rows[i].begin(), rows[i].end(), &v[i * width]);
  return Tensor::from_vector<int32_t>(
      {static_cast<int64_t>(rows.size()), static_cast<int64_t>(width)}, v);
}

class HfParity : public ::testing::TestWithParam<std::string> {};

// All 20 pairs in one padded batch: padding masks and positions are exercised too.
TEST_P(HfParity, TeacherForcedLogProbsWithin1e4) {
  const json ref = reference(GetParam());
  const auto model = load_model(converted(GetParam()));
  const ModelConfig& c = model->config();
  std::vector<std::vector<int32_t>> src, dec, labels;
  for (const json& p : ref["teacher_forced"]) {
    const auto trg = p["target"].get<std::vector<int32_t>>();
    if (c.has_encoder()) {
      src.push_back(p["source"].get<std::vector<int32_t>>());
      dec.push_back(trg);
      dec.back().insert(dec.back().begin(), static_cast<int32_t>(c.bos_id));
      labels.push_back(trg);
      labels.back().push_back(static_cast<int32_t>(c.eos_id));
    } else {  // GPT-2: each position predicts the next token
      dec.push_back(trg);
      labels.emplace_back(trg.begin() + 1, trg.end());
    }
  }
  NoGradGuard no_grad;
  const Tensor logp = log_softmax(model->forward(c.has_encoder() ? padded(src, c.pad_id) : Tensor(),
                                                 padded(dec, c.pad_id)));  // (B, T, V)
  const HostView<float> lp = to_host<float>(logp.contiguous());
  const int64_t T = logp.size(1), V = logp.size(2);
  double worst = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const auto want = ref["teacher_forced"][i]["log_probs"].get<std::vector<double>>();
    ASSERT_EQ(want.size(), labels[i].size());
    for (size_t t = 0; t < want.size(); ++t) {
      const double got =
          lp[(static_cast<int64_t>(i) * T + static_cast<int64_t>(t)) * V + labels[i][t]];
      worst = std::max(worst, std::abs(got - want[t]));
      EXPECT_NEAR(got, want[t], 1e-4) << "pair " << i << " token " << t;
    }
  }
  std::cout << GetParam() << ": worst |Δ log p| per token " << worst << "\n";
}

// generate() at num_beams 1 and 4 with the model's generation config, as Translator decodes a
// converted model by default.
TEST_P(HfParity, GreedyAndBeamFourEqualGenerate) {
  const json ref = reference(GetParam());
  Translator t(converted(GetParam()));
  EXPECT_EQ(t.model_info().search_rule, "transformers");
  const auto sources = id_lists(ref["sources"]);
  for (const int64_t beam : {1, 4}) {
    SCOPED_TRACE("beam " + std::to_string(beam));
    TranslationOptions o = t.default_options();
    EXPECT_EQ(o.beam_size, 4);  // the fixtures' generation config
    EXPECT_EQ(o.search, Search::beam);
    o.beam_size = beam;
    o.search = search_for(beam, /*sampling=*/false);
    std::vector<TranslationResult> r;
    if (t.model_info().decoder_only)
      r = t.generate_batch(sources, o);
    else
      r = t.translate_batch(sources, o);
    const json& want = ref[beam == 1 ? "greedy" : "beam"];
    ASSERT_EQ(r.size(), want.size());
    double worst = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      ASSERT_EQ(r[i].hypotheses.size(), 1u) << "sentence " << i;
      const TranslationHypothesis& h = r[i].hypotheses[0];
      EXPECT_EQ(h.ids, want[i]["tokens"].get<std::vector<int64_t>>()) << "sentence " << i;
      if (beam > 1) {
        worst = std::max(worst, std::abs(h.score - want[i]["score"].get<double>()));
        EXPECT_NEAR(h.score, want[i]["score"].get<double>(), 1e-4) << "sentence " << i;
      }
    }
    if (beam > 1) std::cout << GetParam() << ": worst |Δ sequences_scores| " << worst << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Families, HfParity, ::testing::ValuesIn(kModels));

}  // namespace
}  // namespace tfm
