// tfm::convert_transformers on what a Transformers directory may hold besides the fixtures'
// plain case: options tfm cannot run refused by name, missing and unexpected tensors, tied and
// untied heads, sharded checkpoints, stored Marian sinusoids, pytorch_model.bin, an output
// directory in the way, and the precision recorded with --quantization.
#include <filesystem>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "support/test_util.h"
#include "tfm/convert.h"
#include "tfm/core/file_util.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/generation_config.h"
#include "tfm/model/safetensors.h"
#include "tfm/nn/positional.h"
#include "tfm/translator.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFixtures = std::string(TFM_FIXTURES_DIR) + "/hf";

std::string temp_dir(const std::string& tag) {
  static int n = 0;
  const fs::path d =
      fs::temp_directory_path() /
      ("tfm_hfc_" + tag + "_" + std::to_string(getpid()) + "_" + std::to_string(n++));
  fs::remove_all(d);
  return d.string();
}

TranslatorOptions precision(ComputeType c) {
  TranslatorOptions o;
  o.compute_type = c;
  return o;
}

// A copy of fixture `name`'s Transformers directory, to edit.
std::string copy_of(const std::string& name) {
  const std::string d = temp_dir(name);
  fs::copy(kFixtures + "/" + name + "/model", d, fs::copy_options::recursive);
  return d;
}

void edit_json(const std::string& path, const std::function<void(json&)>& f) {
  json j = json::parse(read_file(path));
  f(j);
  write_file_atomic(path, j.dump(2));
}

// The checkpoint's tensors rewritten by f (name -> tensor; erase to drop, assign to add).
void edit_weights(const std::string& dir,
                  const std::function<void(std::map<std::string, Tensor>&)>& f) {
  const std::string path = dir + "/model.safetensors";
  std::map<std::string, Tensor> t;
  for (auto& [name, x] : load_safetensors(path).tensors) t.emplace(name, x.clone());
  f(t);
  save_safetensors(path, {t.begin(), t.end()});
}

std::string convert_error(const std::string& dir) {
  return testing::error_of([&] { convert_transformers(dir, temp_dir("out")); });
}

TEST(HfConvert, RefusesByNameWhatTfmCannotRunExactly) {
  struct Case {
    const char* model;
    const char* file;
    std::function<void(json&)> edit;
    const char* says;
  };
  const Case cases[] = {
      {"marian_shared", "config.json", [](json& j) { j["activation_function"] = "quick_gelu"; },
       "activation_function"},
      {"marian_shared", "config.json", [](json& j) { j["decoder_ffn_dim"] = 48; },
       "decoder_ffn_dim"},
      {"marian_shared", "config.json", [](json& j) { j["decoder_attention_heads"] = 2; },
       "decoder_attention_heads"},
      {"bart", "config.json", [](json& j) { j["normalize_before"] = true; }, "normalize_before"},
      {"mbart50", "config.json", [](json& j) { j["add_final_layer_norm"] = false; },
       "add_final_layer_norm"},
      {"marian_shared", "config.json", [](json& j) { j["model_type"] = "t5"; }, "model_type"},
      {"gpt2", "config.json", [](json& j) { j["scale_attn_by_inverse_layer_idx"] = true; },
       "scale_attn_by_inverse_layer_idx"},
      {"gpt2", "config.json", [](json& j) { j["scale_attn_weights"] = false; },
       "scale_attn_weights"},
      {"m2m100", "config.json",
       [](json& j) {
         j["eos_token_id"] = json::array({2, 3});
       },
       "eos_token_id"},
      {"marian_shared", "generation_config.json", [](json& j) { j["do_sample"] = true; },
       "do_sample"},
      {"marian_shared", "generation_config.json", [](json& j) { j["repetition_penalty"] = 1.2; },
       "repetition_penalty"},
      {"bart", "generation_config.json", [](json& j) { j["num_beam_groups"] = 2; },
       "num_beam_groups"},
      {"bart", "generation_config.json", [](json& j) { j["suppress_tokens"] = json::array({5}); },
       "suppress_tokens"},
      {"bart", "generation_config.json", [](json& j) { j["early_stopping"] = "sometimes"; },
       "early_stopping"},
      {"gpt2", "generation_config.json", [](json& j) { j["min_new_tokens"] = 3; },
       "min_new_tokens"},
  };
  for (const Case& c : cases) {
    const std::string dir = copy_of(c.model);
    edit_json(dir + "/" + c.file, c.edit);
    const std::string err = convert_error(dir);
    EXPECT_NE(err.find(c.says), std::string::npos)
        << c.model << " " << c.file << " " << c.says << ": \"" << err << "\"";
  }
}

TEST(HfConvert, KeysTransformersDoesNotReadAreIgnoredAsItIgnoresThem) {
  const std::string dir = copy_of("marian_shared");
  edit_json(dir + "/config.json", [](json& j) {
    j["normalize_before"] = false;  // what Marian's code does anyway
    j["static_position_embeddings"] = true;
    j["some_future_key"] = 3;
    j["id2label"] = {{"0", "A"}};
  });
  EXPECT_EQ(convert_transformers(dir, temp_dir("out")).family, "marian");
}

TEST(HfConvert, MissingAndUnexpectedTensorsAreNamed) {
  std::string dir = copy_of("bart");
  edit_weights(dir, [](auto& t) { t.erase("model.decoder.layers.1.fc2.weight"); });
  EXPECT_NE(convert_error(dir).find("model.decoder.layers.1.fc2.weight"), std::string::npos)
      << convert_error(dir);
  dir = copy_of("bart");
  edit_weights(dir, [](auto& t) { t.emplace("model.encoder.adapter.weight", Tensor::zeros({4})); });
  EXPECT_NE(convert_error(dir).find("encoder.adapter.weight"), std::string::npos);
  // An untied head must be in the checkpoint (Transformers would draw it at random).
  dir = copy_of("bart_untied");
  edit_weights(dir, [](auto& t) { t.erase("lm_head.weight"); });
  EXPECT_NE(convert_error(dir).find("lm_head.weight"), std::string::npos);
  // A wrong shape names the tensor and both shapes.
  dir = copy_of("gpt2");
  edit_weights(dir, [](auto& t) {
    t["transformer.h.0.mlp.c_fc.weight"] = Tensor::zeros({32, 64});
  });
  EXPECT_NE(convert_error(dir).find("decoder.layers.0.ffn.fc1.weight"), std::string::npos);
}

// The tfm model of a directory, as teacher-forced log-probabilities over a fixed batch: two
// conversions agree when these are bitwise equal.
Tensor probe(const std::string& tfm_dir) {
  const auto m = load_model(tfm_dir);
  const Tensor src = Tensor::from_vector<int32_t>({1, 4}, {5, 9, 12, 0});
  const Tensor trg =
      Tensor::from_vector<int32_t>({1, 3}, {static_cast<int32_t>(m->config().bos_id), 7, 8});
  return m->forward(m->config().has_encoder() ? src : Tensor(), trg).detach();
}

TEST(HfConvert, TiedCopiesAndShardsGiveTheSameModel) {
  const std::string plain = temp_dir("plain");
  convert_transformers(kFixtures + "/marian_shared/model", plain);
  // Older checkpoints save every tied copy (lm_head, the stacks' tables): Transformers ties them
  // to `shared` when it loads, and so does the converter.
  std::string dir = copy_of("marian_shared");
  edit_weights(dir, [](auto& t) {
    t["lm_head.weight"] = Tensor::zeros(t.at("model.shared.weight").shape());
    t["model.encoder.embed_tokens.weight"] = t.at("model.shared.weight").clone();
    t["model.decoder.embed_tokens.weight"] = t.at("model.shared.weight").clone();
  });
  std::string out = temp_dir("tied");
  convert_transformers(dir, out);
  EXPECT_TRUE(testing::bitwise_equal(probe(out), probe(plain)));
  // Sharded: model.safetensors.index.json and two files.
  dir = copy_of("marian_shared");
  const SafetensorsFile f = load_safetensors(dir + "/model.safetensors");
  std::vector<std::pair<std::string, Tensor>> a, b;
  json index;
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    (i % 2 ? a : b).emplace_back(f.tensors[i].first, f.tensors[i].second.clone());
    index["weight_map"][f.tensors[i].first] = i % 2 ? "part-1.safetensors" : "part-2.safetensors";
  }
  save_safetensors(dir + "/part-1.safetensors", a);
  save_safetensors(dir + "/part-2.safetensors", b);
  write_file_atomic(dir + "/model.safetensors.index.json", index.dump());
  fs::remove(dir + "/model.safetensors");
  out = temp_dir("sharded");
  convert_transformers(dir, out);
  EXPECT_TRUE(testing::bitwise_equal(probe(out), probe(plain)));
}

TEST(HfConvert, StoredMarianSinusoidsMustBeMarians) {
  const std::string plain = temp_dir("plain");
  convert_transformers(kFixtures + "/marian_separate/model", plain);
  const ModelConfig c = read_model_config(plain);
  std::string dir = copy_of("marian_separate");
  edit_weights(dir, [&](auto& t) {
    t["model.encoder.embed_positions.weight"] =
        nn::sinusoidal_marian_table(c.max_length, c.d_model);
  });
  const std::string out = temp_dir("stored");
  convert_transformers(dir, out);
  EXPECT_TRUE(testing::bitwise_equal(probe(out), probe(plain)));
  dir = copy_of("marian_separate");
  edit_weights(dir, [&](auto& t) {
    t["model.decoder.embed_positions.weight"] = nn::sinusoidal_table(c.max_length, c.d_model);
  });
  EXPECT_NE(convert_error(dir).find("differs from Marian's sinusoids"), std::string::npos);
}

TEST(HfConvert, PytorchCheckpointsNameThePythonConverter) {
  const std::string dir = copy_of("m2m100");
  fs::rename(dir + "/model.safetensors", dir + "/pytorch_model.bin");
  EXPECT_NE(convert_error(dir).find("tfm.convert_transformers"), std::string::npos);
}

TEST(HfConvert, OutputDirectoryInTheWayNeedsForce) {
  const std::string out = temp_dir("busy");
  fs::create_directories(out);
  write_file_atomic(out + "/keep.txt", "x");
  const std::string src = kFixtures + "/gpt2/model";
  EXPECT_TFM_ERROR(convert_transformers(src, out), "--force");
  EXPECT_TRUE(fs::exists(out + "/keep.txt"));
  ConvertOptions o;
  o.force = true;
  EXPECT_EQ(convert_transformers(src, out, o).family, "gpt2");
  EXPECT_FALSE(fs::exists(out + "/keep.txt"));
  EXPECT_TFM_ERROR(convert_transformers(kFixtures + "/nope", temp_dir("x")), "not a directory");
}

// --quantization records the precision a Translator asking for auto runs in; a bf16 or int8 model
// stays close to the fp32 one.
TEST(HfConvert, QuantizationIsTheAutoPrecision) {
  const std::string fp32 = temp_dir("fp32");
  convert_transformers(kFixtures + "/marian_shared/model", fp32);
  const std::vector<std::vector<int64_t>> src = {{20, 71, 52, 62, 80, 25, 18, 42, 54, 76, 0},
                                                 {33, 12, 9, 0}};
  const std::vector<std::vector<int64_t>> trg = {{18, 18, 18, 82}, {40, 41}};
  Translator ref(fp32, precision(ComputeType::automatic));
  EXPECT_EQ(ref.model_info().compute_type, "");
  const std::vector<double> want = Translator(fp32).score_batch(src, trg);
  for (const char* q : {"int8", "bf16"}) {
    SCOPED_TRACE(q);
    const std::string out = temp_dir(q);
    ConvertOptions o;
    o.quantization = q;
    EXPECT_EQ(convert_transformers(kFixtures + "/marian_shared/model", out, o).compute_type, q);
    Translator t(out, precision(ComputeType::automatic));
    EXPECT_EQ(compute_type_name(t.options().compute_type), std::string(q));
    // An explicit precision still wins.
    EXPECT_EQ(Translator(out, precision(ComputeType::float32)).options().compute_type,
              ComputeType::float32);
    const std::vector<double> got = t.score_batch(src, trg);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.05 * std::abs(want[i]));
    EXPECT_EQ(t.translate_batch(src, t.default_options()).size(), 2u);
  }
  ConvertOptions bad;
  bad.quantization = "int4";
  EXPECT_TFM_ERROR(convert_transformers(kFixtures + "/marian_shared/model", temp_dir("q"), bad),
                   "int4");
}

// The transformers rule returns attention as the tfm rule does: a row per output token (the
// forced language token included, EOS none), over the source the model reads, summing to 1; and
// a target prefix starts every hypothesis, forced.
TEST(HfConvert, AttentionAndPrefixesUnderTheTransformersRule) {
  const std::string dir = temp_dir("m2m");
  convert_transformers(kFixtures + "/m2m100/model", dir);
  Translator t(dir);
  const std::vector<std::vector<int64_t>> src = {{96, 4, 67, 33, 19, 66, 2}, {96, 50, 2}};
  TranslationOptions o = t.default_options();
  o.return_attention = true;
  o.num_hypotheses = 2;
  for (const TranslationResult& r : t.translate_batch(src, o)) {
    ASSERT_EQ(r.hypotheses.size(), 2u);
    for (const TranslationHypothesis& h : r.hypotheses) {
      ASSERT_FALSE(h.ids.empty());
      EXPECT_EQ(h.ids[0], 97);  // forced_bos_token_id
      ASSERT_EQ(h.attention.size(), h.ids.size());
      for (const auto& row : h.attention) {
        double sum = 0;
        for (float w : row) sum += w;
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
    }
    EXPECT_GE(r.hypotheses[0].score, r.hypotheses[1].score);
  }
  EXPECT_EQ(t.translate_batch(src, o)[0].hypotheses[0].attention[0].size(), src[0].size());
  // A prefix is generate()'s decoder prompt: forced, outside the score (the forced BOS step is
  // then inside the prompt).
  o.return_attention = false;
  o.num_hypotheses = 1;
  const auto r = t.translate_batch(src, {{97, 38}, {}}, o);
  ASSERT_GE(r[0].hypotheses[0].ids.size(), 2u);
  EXPECT_EQ(r[0].hypotheses[0].ids[0], 97);
  EXPECT_EQ(r[0].hypotheses[0].ids[1], 38);
  EXPECT_EQ(r[1].hypotheses[0].ids[0], 97);
  EXPECT_TFM_ERROR(t.translate_batch(src, {{1}, {}}, o), "PAD");
}

}  // namespace
}  // namespace tfm
