// Converted Hugging Face models with their tokenizers, text in and text out: convert_transformers
// imports the directory's tokenizer (tfm_tokenizer.json), and Translator::translate_batch on
// plain text gives Transformers' batch_decode(generate(tok(text).input_ids),
// skip_special_tokens=True) — the source framed with the asked source language, the asked target
// language forced first — for a Marian (OPUS-MT) and an NLLB-200 model
// (tools/make_hf_text_fixtures.py).
#include <filesystem>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "support/test_util.h"
#include "tfm/convert.h"
#include "tfm/core/file_util.h"
#include "tfm/error.h"
#include "tfm/model/checkpoint.h"
#include "tfm/translator.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kFixtures = std::string(TFM_FIXTURES_DIR) + "/hf_text";
const std::string kTokenizers = std::string(TFM_FIXTURES_DIR) + "/hf_tokenizers";

json reference(const std::string& name) {
  return json::parse(read_file(kFixtures + "/" + name + "/reference.json"));
}

std::string temp_dir(const std::string& tag) {
  static int n = 0;
  const fs::path d =
      fs::temp_directory_path() /
      ("tfm_hf_text_" + tag + "_" + std::to_string(getpid()) + "_" + std::to_string(n++));
  fs::remove_all(d);
  return d.string();
}

// The Transformers directory the fixture stands for: its model/ files and its tokenizer's
// (tests/fixtures/hf_tokenizers/<tokenizer>/, without that fixture's reference.json).
std::string hf_dir(const std::string& name) {
  const std::string d = temp_dir(name + "_hf");
  fs::create_directories(d);
  for (const auto& e : fs::directory_iterator(kFixtures + "/" + name + "/model"))
    fs::copy_file(e.path(), d / e.path().filename());
  const std::string tok = reference(name)["tokenizer"].get<std::string>();
  for (const auto& e : fs::directory_iterator(kTokenizers + "/" + tok))
    if (e.path().filename() != "reference.json") fs::copy_file(e.path(), d / e.path().filename());
  return d;
}

// Converted once per process.
const std::string& converted(const std::string& name) {
  static std::map<std::string, std::string> dirs;
  auto it = dirs.find(name);
  if (it != dirs.end()) return it->second;
  const std::string out = temp_dir(name);
  convert_transformers(hf_dir(name), out);
  return dirs[name] = out;
}

class HfText : public ::testing::TestWithParam<std::string> {};

TEST_P(HfText, ConvertedDirectoryCarriesTheTokenizer) {
  const std::string& dir = converted(GetParam());
  EXPECT_TRUE(fs::exists(fs::path(dir) / "tfm_tokenizer.json"));
  const ModelInfo info = read_model_info(dir);
  EXPECT_EQ(info.tokenizer, GetParam());  // the tokenizer family: "marian", "nllb"
  Translator t(dir);
  EXPECT_TRUE(t.has_vocabularies());
}

// Every case of the fixture: the model's defaults (its generation config, the tokenizer's
// default source language), greedy, and other language pairs.
TEST_P(HfText, TranslatesTextAsGenerateAndBatchDecode) {
  const json ref = reference(GetParam());
  Translator t(converted(GetParam()));
  for (const json& c : ref["cases"]) {
    TranslationOptions o = t.default_options();
    std::string label = "defaults";
    if (!c["num_beams"].is_null()) {
      o.beam_size = c["num_beams"].get<int64_t>();
      o.search = search_for(o.beam_size, /*sampling=*/false);
      label = "beam " + std::to_string(o.beam_size);
    }
    if (!c["src_lang"].is_null()) o.source_lang = c["src_lang"].get<std::string>();
    if (!c["tgt_lang"].is_null()) o.target_lang = c["tgt_lang"].get<std::string>();
    SCOPED_TRACE(label + " " + o.source_lang + "→" + o.target_lang);
    const auto sources = c["sources"].get<std::vector<std::string>>();
    const std::vector<TranslationResult> r = t.translate_batch(sources, o);
    ASSERT_EQ(r.size(), sources.size());
    for (size_t i = 0; i < r.size(); ++i) {
      ASSERT_EQ(r[i].hypotheses.size(), 1u) << "sentence " << i;
      EXPECT_EQ(r[i].hypotheses[0].ids, c["tokens"][i].get<std::vector<int64_t>>())
          << "sentence " << i << ": " << sources[i];
      EXPECT_EQ(r[i].hypotheses[0].text, c["outputs"][i].get<std::string>())
          << "sentence " << i << ": " << sources[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, HfText, ::testing::Values("marian", "nllb"));

// The source as the NLLB tokenizer's input_ids frame it ([lang] pieces </s>; the other
// languages' framing is checked by the cases above), and language codes that the tokenizer does
// not know refused in the options' names.
TEST(HfTextLanguages, NllbFramingAndUnknownCodes) {
  Translator t(converted("nllb"));
  const std::vector<std::string> tokens = t.source_tokens("Ein Hund");
  ASSERT_GE(tokens.size(), 3u);
  EXPECT_EQ(tokens.front(), "deu_Latn");  // the tokenizer's default src_lang
  EXPECT_EQ(tokens.back(), "</s>");
  TranslationOptions o = t.default_options();
  o.source_lang = "xxx_Latn";
  try {
    t.translate_batch(std::vector<std::string>{"Ein Hund"}, o);
    FAIL() << "an unknown source_lang was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("source_lang \"xxx_Latn\""), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("knows"), std::string::npos) << e.what();
  }
  o.source_lang.clear();
  o.target_lang = "yyy_Latn";
  try {
    t.translate_batch(std::vector<std::string>{"Ein Hund"}, o);
    FAIL() << "an unknown target_lang was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("target_lang \"yyy_Latn\""), std::string::npos)
        << e.what();
  }
}

// A Marian model has no languages: a source or target language is refused by name.
TEST(HfTextLanguages, MarianRefusesLanguages) {
  Translator t(converted("marian"));
  TranslationOptions o = t.default_options();
  o.source_lang = "deu";
  EXPECT_THROW(t.translate_batch(std::vector<std::string>{"Ein Hund"}, o), InvalidArgument);
}

}  // namespace
}  // namespace tfm
