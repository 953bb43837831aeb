// A model directory holding a converted Hugging Face tokenizer (tfm_tokenizer.json) translates
// text through it: the Translator reads sources as Transformers' input_ids (the tokenizer's
// framing included), decodes hypotheses as batch_decode does, cuts an over-long source before
// the framing's end, and is refused a tokenizer that does not fit the model.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tfm/core/file_util.h"
#include "tfm/data/hf_tokenizer_import.h"
#include "tfm/data/tokenizer_files.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/transformer.h"
#include "tfm/translator.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixtures = fs::path(TFM_FIXTURES_DIR) / "hf_tokenizers";

// A random tiny model whose vocabulary is the tokenizer's, beside the converted tokenizer.
class ConvertedTokenizer : public ::testing::Test {
 protected:
  void make(const std::string& family, int64_t vocab_extra = 0, int64_t max_length = 256) {
    dir_ =
        fs::temp_directory_path() / ("tfm_conv_tok_" + std::to_string(::getpid()) + "_" + family);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    imported_ = import_hf_tokenizer((kFixtures / family).string(), dir_.string());
    ModelConfig c = ModelConfig::preset("tiny");
    c.src_vocab_size = imported_.src_size + vocab_extra;
    c.trg_vocab_size = imported_.trg_size + vocab_extra;
    c.pad_id = imported_.special.pad;
    c.eos_id = imported_.special.eos;
    c.bos_id = imported_.special.eos;     // NLLB's decoder starts from </s>
    c.source_bos = c.source_eos = false;  // the tokenizer frames the source
    c.max_length = max_length;
    c.dropout = 0;
    Transformer model(c, 3);
    save_model(model, dir_.string());
    ref_ = json::parse(read_file((kFixtures / family / "reference.json").string()));
    lines_ =
        json::parse(read_file((kFixtures / "lines.json").string())).get<std::vector<std::string>>();
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  HfTokenizerImport imported_;
  json ref_;
  std::vector<std::string> lines_;
};

TEST_F(ConvertedTokenizer, SourcesAreTransformersInputIdsAndTextIsItsDecoding) {
  make("nllb");
  const Translator t(dir_.string());
  EXPECT_EQ(fs::path(t.model_info().src_vocab_path).filename(), kTokenizerConfigFile);
  size_t checked = 0;
  for (size_t i = 0; i + 1 < lines_.size(); ++i) {  // the last line is longer than the model
    const auto want = ref_["source"][i].get<std::vector<int64_t>>();
    const std::vector<int64_t> got = t.tokenize_source(lines_[i]);
    // An empty text stays empty (no translation), where Transformers frames it anyway.
    if (want.size() == 2) {
      EXPECT_TRUE(got.empty() || got == want) << "line " << i + 1;
      continue;
    }
    EXPECT_EQ(got, want) << "line " << i + 1;
    ++checked;
  }
  EXPECT_GT(checked, 150u);
  // Tokens, as CTranslate2's callers pass them, round-trip to the same ids, framing included.
  const std::vector<std::string> tokens = t.source_tokens(lines_[4]);
  EXPECT_EQ(tokens.front(), "deu_Latn");
  EXPECT_EQ(tokens.back(), "</s>");
  EXPECT_EQ(t.source_tokens_to_ids(tokens), ref_["source"][4].get<std::vector<int64_t>>());
  const ModelTokenizers tok = load_model_tokenizers(dir_.string());
  const std::vector<size_t> picked = {4, 20, 60};
  std::vector<std::string> texts;
  std::vector<std::vector<int64_t>> input_ids;
  for (const size_t i : picked) {
    texts.push_back(lines_[i]);
    input_ids.push_back(ref_["source"][i].get<std::vector<int64_t>>());
  }
  const auto results =
      t.translate_batch(texts, TranslationOptions{.search = Search::beam, .beam_size = 2});
  // Text in is Transformers' ids in.
  const auto by_ids =
      t.translate_batch(input_ids, TranslationOptions{.search = Search::beam, .beam_size = 2});
  ASSERT_EQ(results.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_FALSE(results[i].hypotheses.empty());
    const auto& h = results[i].hypotheses[0];
    EXPECT_EQ(h.text, tok.trg->decode(Ids(h.ids.begin(), h.ids.end())));
    EXPECT_EQ(by_ids[i].hypotheses[0].ids, h.ids);
  }
}

TEST_F(ConvertedTokenizer, ALongSourceIsCutBeforeItsFramingsEnd) {
  make("nllb_legacy", 0, 24);  // X </s> [src_lang]
  const Translator t(dir_.string());
  const std::vector<int64_t> ids = t.tokenize_source(lines_.back());
  ASSERT_GT(ids.size(), 24u);
  const auto r = t.translate_batch(std::vector<std::vector<int64_t>>{ids},
                                   TranslationOptions{.return_attention = true});
  EXPECT_TRUE(r[0].source_truncated);
  // The attention rows cover the 24 positions the model read; translating those 24 ids, the
  // first 22 and the framing's two, gives the same.
  std::vector<int64_t> cut(ids.begin(), ids.begin() + 22);
  cut.insert(cut.end(), ids.end() - 2, ids.end());
  const auto again = t.translate_batch(std::vector<std::vector<int64_t>>{cut}, {});
  EXPECT_FALSE(again[0].source_truncated);
  EXPECT_EQ(again[0].hypotheses[0].ids, r[0].hypotheses[0].ids);
  EXPECT_NEAR(again[0].hypotheses[0].log_prob, r[0].hypotheses[0].log_prob, 1e-6);
  // (Cutting the framing off instead reads another source.)
  const std::vector<int64_t> naive(ids.begin(), ids.begin() + 24);
  const auto other = t.translate_batch(std::vector<std::vector<int64_t>>{naive}, {});
  EXPECT_GT(std::abs(other[0].hypotheses[0].log_prob - r[0].hypotheses[0].log_prob), 1e-6);
  ASSERT_FALSE(r[0].hypotheses[0].attention.empty());
  EXPECT_EQ(r[0].hypotheses[0].attention[0].size(), 24u);
}

TEST_F(ConvertedTokenizer, ATokenizerLargerThanTheModelIsRefused) {
  make("bart", -1);
  const Translator t(dir_.string());
  EXPECT_FALSE(t.has_vocabularies());
  try {
    t.require_vocabularies();
    FAIL() << "a tokenizer with ids beyond the model's vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("gives ids up to"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace tfm
