// Hugging Face tokenizers converted by import_hf_tokenizer give the ids and the text of
// Transformers' own tokenizers (transformers 5, tokenizers 0.23): tests/fixtures/hf_tokenizers,
// made by tools/make_hf_tokenizer_fixtures.py, holds each family's tokenizer directory and what
// AutoTokenizer.from_pretrained(dir) gave for 200 lines of text (accents, CJK, emoji, empty and
// whitespace-only lines, special tokens in the text, a very long line) and for random id
// sequences.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tfm/core/file_util.h"
#include "tfm/data/hf_tokenizer_import.h"
#include "tfm/data/tokenizer_files.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixtures = fs::path(TFM_FIXTURES_DIR) / "hf_tokenizers";

json read_json(const fs::path& p) {
  return json::parse(read_file(p.string()));
}

std::string show(const std::vector<int64_t>& ids) {
  std::ostringstream s;
  for (size_t i = 0; i < ids.size(); ++i) s << (i ? " " : "") << ids[i];
  return s.str();
}

std::vector<int64_t> widen(const Ids& ids) {
  return {ids.begin(), ids.end()};
}

class HfTokenizers : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    out_ =
        fs::temp_directory_path() / ("tfm_hf_tok_" + std::to_string(::getpid()) + "_" + GetParam());
    fs::remove_all(out_);
    fs::create_directories(out_);
    ref_ = read_json(kFixtures / GetParam() / "reference.json");
    lines_ = read_json(kFixtures / "lines.json").get<std::vector<std::string>>();
    imported_ = import_hf_tokenizer((kFixtures / GetParam()).string(), out_.string());
    tok_ = load_model_tokenizers(out_.string());
    ASSERT_TRUE(tok_.src && tok_.trg);
  }
  void TearDown() override { fs::remove_all(out_); }

  // The target side's ids of each line (without framing), as Transformers gave them: the
  // reference's, or where the two sides are one tokenizer, the source's without its framing.
  json target_ids() const {
    if (!ref_["target"].is_null()) return ref_["target"];
    const SourceFraming& f = tok_.src->framing();
    json out = json::array();
    for (const json& ids : ref_["source"]) {
      const auto v = ids.get<std::vector<int64_t>>();
      out.push_back(std::vector<int64_t>(v.begin() + static_cast<std::ptrdiff_t>(f.prefix.size()),
                                         v.end() - static_cast<std::ptrdiff_t>(f.suffix.size())));
    }
    return out;
  }

  fs::path out_;
  json ref_;
  std::vector<std::string> lines_;
  HfTokenizerImport imported_;
  ModelTokenizers tok_;
};

// Each line's ids from `encode` against `want`; prints the agreement.
template <typename Encode>
void expect_lines_equal(const std::string& name, const char* key, const json& want,
                        const std::vector<std::string>& lines, Encode encode) {
  ASSERT_EQ(want.size(), lines.size());
  size_t equal = 0;
  std::string first;
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto got = widen(encode(lines[i]));
    const auto expected = want[i].get<std::vector<int64_t>>();
    if (got == expected) {
      ++equal;
    } else if (first.empty()) {
      first = "line " + std::to_string(i + 1) + " \"" + lines[i].substr(0, 80) +
              "\":\n  tfm:          " + show(got) + "\n  Transformers: " + show(expected);
    }
  }
  std::cout << name << ": " << key << " ids equal on " << equal << "/" << lines.size()
            << " lines\n";
  EXPECT_EQ(equal, lines.size()) << first;
}

TEST_P(HfTokenizers, SourceIdsEqualTransformers) {
  expect_lines_equal(GetParam(), "source", ref_["source"], lines_, [&](const std::string& line) {
    return tok_.src->frame_source(tok_.src->encode(line));
  });
}

TEST_P(HfTokenizers, TargetIdsEqualTransformers) {
  expect_lines_equal(GetParam(), "target", target_ids(), lines_,
                     [&](const std::string& line) { return tok_.trg->encode(line); });
}

TEST_P(HfTokenizers, DecodeEqualsBatchDecodeSkippingSpecialTokens) {
  // Each line's target ids framed as tok(text_target=line) frames them, then random ids.
  std::vector<std::pair<std::vector<int64_t>, std::string>> cases;
  const json targets = target_ids();
  const auto prefix = ref_["target_framing"][0].get<std::vector<int64_t>>();
  const auto suffix = ref_["target_framing"][1].get<std::vector<int64_t>>();
  for (size_t i = 0; i < lines_.size(); ++i) {
    std::vector<int64_t> ids = prefix;
    for (const json& id : targets[i]) ids.push_back(id.get<int64_t>());
    ids.insert(ids.end(), suffix.begin(), suffix.end());
    const json& text = ref_["decode_lines"][i];
    cases.emplace_back(ids, text.is_null() ? lines_[i] : text.get<std::string>());
  }
  for (const json& c : ref_["decode"])
    cases.emplace_back(c[0].get<std::vector<int64_t>>(), c[1].get<std::string>());
  size_t equal = 0;
  std::string first;
  for (const auto& [ids, want] : cases) {
    const std::string got = tok_.trg->decode(Ids(ids.begin(), ids.end()));
    if (got == want) {
      ++equal;
    } else if (first.empty()) {
      first = "ids " + show(ids) + ":\n  tfm:          \"" + got + "\"\n  Transformers: \"" + want +
              "\"";
    }
  }
  std::cout << GetParam() << ": decoded text equal on " << equal << "/" << cases.size()
            << " id sequences\n";
  EXPECT_EQ(equal, cases.size()) << first;
}

// The ids Transformers gives its added tokens, and their flags, come out of the import.
TEST_P(HfTokenizers, AddedTokensAndSpecialIdsAsTransformers) {
  const json config = read_json(out_ / kTokenizerConfigFile);
  std::map<int64_t, json> ours;
  for (const json& t : config["source"]["added_tokens"]) ours[t["id"].get<int64_t>()] = t;
  for (const json& a : ref_["added"]) {
    const int64_t id = a[0].get<int64_t>();
    ASSERT_TRUE(ours.count(id)) << "Transformers' added token " << a.dump() << " is missing";
    const json& t = ours[id];
    EXPECT_EQ(t["content"], a[1]) << a.dump();
    EXPECT_EQ(t["special"], a[2]) << a.dump();
    EXPECT_EQ(t["lstrip"], a[3]) << a.dump();
    EXPECT_EQ(t["rstrip"], a[4]) << a.dump();
    EXPECT_EQ(t["single_word"], a[5]) << a.dump();
    // (normalized changes nothing for SentencePiece-backed tokenizers, which ignore it.)
    if (config["source"]["kind"] == "pipeline") {
      EXPECT_EQ(t["normalized"], a[6]) << a.dump();
    }
  }
  // Every id Transformers gave is below the tokenizer's size.
  for (const bool source : {true, false}) {
    int64_t top = -1;
    for (const json& ids : source ? ref_["source"] : target_ids())
      for (const json& id : ids) top = std::max(top, id.get<int64_t>());
    EXPECT_GT((source ? tok_.src : tok_.trg)->size(), top) << (source ? "source" : "target");
  }
  if (!ref_["src_lang"].is_null()) {
    EXPECT_EQ(imported_.src_lang, ref_["src_lang"].get<std::string>());
    EXPECT_EQ(tok_.src->default_source_lang(), ref_["src_lang"].get<std::string>());
  }
  if (!ref_["tgt_lang"].is_null()) {
    EXPECT_EQ(imported_.tgt_lang_id, tok_.src->language_id(ref_["tgt_lang"].get<std::string>()));
  }
}

INSTANTIATE_TEST_SUITE_P(Families, HfTokenizers,
                         ::testing::Values("marian_shared", "marian_separate", "m2m100", "nllb",
                                           "nllb_legacy", "nllb_spm_only", "mbart", "mbart50",
                                           "mbart50_spm_only", "bart", "gpt2", "gpt2_prefix_space"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace tfm
