// CTranslate2's return_logits_vocab, replace_unknowns and prefix_bias_beta through tfm::Translator,
// each against what it must equal: the logits' log-softmax at the hypothesis' ids is
// score_batch_per_token's teacher-forced log-probabilities; each unknown token's source position
// is the argmax of its attention row; a biased search's log_prob is score_batch's. The validator
// refuses the combinations CTranslate2 refuses and those tfm cannot do, naming the option.
// tools/ct2_diff.py checks the three against the real CTranslate2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tfm/translator.h"

namespace tfm {
namespace {

const std::string kModel = std::string(TFM_FIXTURES_DIR) + "/ct2/model";
const std::string kLm = std::string(TFM_FIXTURES_DIR) + "/decoder_only_odd";

std::vector<std::vector<int64_t>> sources(const Translator& t) {
  std::vector<std::vector<int64_t>> out;
  for (const char* s : {"haus baum hund", "katze kind", "mann frau sieht der hund", "spielt"})
    out.push_back(t.tokenize_source(s));
  return out;
}

// log_softmax(row)[id] in double.
double log_prob_of(const std::vector<float>& row, int64_t id) {
  double top = -INFINITY, sum = 0.0;
  for (float v : row) top = std::max(top, double{v});
  for (float v : row) sum += std::exp(double{v} - top);
  return double{row[static_cast<size_t>(id)]} - top - std::log(sum);
}

TEST(Ct2ResultOptions, LogitsGiveScoreBatchPerTokensLogProbs) {
  Translator t(kModel);
  const auto src = sources(t);
  const int64_t V = t.model_info().trg_vocab_size;
  for (const int64_t beam : {1, 3}) {
    TranslationOptions o{.search = beam > 1 ? Search::beam : Search::greedy,
                         .beam_size = beam,
                         .num_hypotheses = beam};
    o.return_logits_vocab = true;
    const auto r = t.translate_batch(src, o);
    for (size_t i = 0; i < src.size(); ++i)
      for (const TranslationHypothesis& h : r[i].hypotheses) {
        // One row per step: each id's, then the end token's.
        ASSERT_EQ(h.logits.size(), h.ids.size() + 1) << "beam " << beam << ", source " << i;
        const auto want = t.score_batch_per_token({src[i]}, {h.ids})[0];
        for (size_t k = 0; k < h.logits.size(); ++k) {
          ASSERT_EQ(std::ssize(h.logits[k]), V);
          const int64_t id = k < h.ids.size() ? h.ids[k] : t.model_info().eos_id;
          EXPECT_NEAR(log_prob_of(h.logits[k], id), want[k], 1e-4)
              << "beam " << beam << ", source " << i << ", step " << k;
        }
      }
    o.return_logits_vocab = false;
    for (const auto& x : t.translate_batch(src, o))
      for (const auto& h : x.hypotheses) EXPECT_TRUE(h.logits.empty());
  }
}

TEST(Ct2ResultOptions, LogitsCountTheEndTokenOnceWithReturnEndToken) {
  Translator t(kModel);
  const auto src = sources(t);
  TranslationOptions o;
  o.return_logits_vocab = true;
  o.return_end_token = true;
  o.min_decoding_length = 2;
  for (const auto& r : t.translate_batch(src, o))
    for (const auto& h : r.hypotheses) {
      ASSERT_EQ(h.logits.size(), h.ids.size());  // the ids end with the end token
      // EOS is disabled (the lowest float) while min_decoding_length forbids it, as in
      // CTranslate2's logits.
      const auto eos = static_cast<size_t>(t.model_info().eos_id);
      for (size_t k = 0; k < 2; ++k)
        EXPECT_EQ(h.logits[k][eos], std::numeric_limits<float>::lowest());
      EXPECT_GT(h.logits[2][eos], -1e6f);
    }
}

TEST(Ct2ResultOptions, UnknownsTakeTheirAttentionRowsArgmax) {
  Translator t(kModel);
  const auto src = sources(t);
  const int64_t unk = t.target_tokens_to_ids({std::string("\x01never a piece")})[0];
  // An unknown token in each prefix, and a repetition penalty below 1 that favours repeating it.
  std::vector<std::vector<int64_t>> prefixes(src.size(), std::vector<int64_t>{unk});
  TranslationOptions o{.search = Search::beam, .beam_size = 2, .num_hypotheses = 2};
  o.repetition_penalty = 0.05;
  o.max_decoding_length = 8;
  o.replace_unknowns = true;
  const auto plain = t.translate_batch(src, prefixes, o);
  o.return_attention = true;
  o.attention_framing = false;  // the source's own tokens: the positions unknown_sources gives
  const auto with = t.translate_batch(src, prefixes, o);
  int64_t unknowns = 0;
  for (size_t i = 0; i < src.size(); ++i)
    for (size_t k = 0; k < with[i].hypotheses.size(); ++k) {
      const TranslationHypothesis& h = with[i].hypotheses[k];
      ASSERT_EQ(h.unknown_sources.size(), h.ids.size());
      for (size_t j = 0; j < h.ids.size(); ++j) {
        if (h.ids[j] != unk) {
          EXPECT_EQ(h.unknown_sources[j], -1);
          continue;
        }
        ++unknowns;
        const auto& row = h.attention[j];
        ASSERT_EQ(row.size(), src[i].size());
        EXPECT_EQ(h.unknown_sources[j], std::max_element(row.begin(), row.end()) - row.begin());
      }
      // The attention is kept for the replacement alone unless asked for.
      EXPECT_TRUE(plain[i].hypotheses[k].attention.empty());
      EXPECT_EQ(plain[i].hypotheses[k].unknown_sources, h.unknown_sources);
    }
  EXPECT_GT(unknowns, std::ssize(src)) << "the fixture must generate unknown tokens too";
  // The text methods have no tokens to put in.
  EXPECT_THROW(t.translate_batch({"haus"}, {""}, o), InvalidArgument);
}

TEST(Ct2ResultOptions, BiasedPrefixKeepsTheModelsLogProb) {
  Translator t(kModel);
  const auto src = sources(t);
  std::vector<std::vector<int64_t>> prefixes;
  for (const char* p : {"the", "a cat", "", "plays"}) prefixes.push_back(t.tokenize_target(p));
  TranslationOptions o{.search = Search::beam, .beam_size = 2};
  o.patience = 1.0;
  o.prefix_bias_beta = 0.99;
  const auto r = t.translate_batch(src, prefixes, o);
  for (size_t i = 0; i < src.size(); ++i) {
    const TranslationHypothesis& h = r[i].hypotheses.at(0);
    EXPECT_TRUE(h.ids.size() >= prefixes[i].size() &&
                std::equal(prefixes[i].begin(), prefixes[i].end(), h.ids.begin()))
        << "source " << i;
    EXPECT_NEAR(h.log_prob, t.score_batch({src[i]}, {h.ids})[0], 1e-4) << "source " << i;
    if (!prefixes[i].empty()) {
      EXPECT_GT(h.score, h.log_prob) << "source " << i;
    }
  }
}

TEST(Ct2ResultOptions, TheValidatorNamesWhatCannotBeDone) {
  ModelInfo m;
  m.trg_vocab_size = 40;
  m.src_vocab_size = 40;
  m.max_length = 100;
  auto refusal = [](const TranslationOptions& o, const ModelInfo& info) -> std::string {
    try {
      validate_translation_options(o, info);
    } catch (const InvalidArgument& e) {
      return e.message();
    }
    return "";
  };
  TranslationOptions o;
  o.prefix_bias_beta = 0.5;
  EXPECT_EQ(refusal(o, m), "");
  o.prefix_bias_beta = 1.0;
  EXPECT_NE(refusal(o, m).find("prefix_bias_beta"), std::string::npos);
  o.prefix_bias_beta = -0.1;
  EXPECT_NE(refusal(o, m).find("prefix_bias_beta"), std::string::npos);
  o.prefix_bias_beta = 0.5;
  o.return_alternatives = true;
  EXPECT_NE(refusal(o, m).find("return_alternatives"), std::string::npos);
  o.return_alternatives = false;
  o.search = Search::sampling;
  EXPECT_NE(refusal(o, m).find("sampling"), std::string::npos);
  o = {};
  o.return_logits_vocab = true;
  EXPECT_EQ(refusal(o, m), "");
  o.return_alternatives = true;
  EXPECT_NE(refusal(o, m).find("return_logits_vocab"), std::string::npos);
  ModelInfo converted = m;
  converted.search_rule = "transformers";
  o = {};
  o.return_logits_vocab = true;
  EXPECT_NE(refusal(o, converted).find("generate()"), std::string::npos);
  o.search_rule = "tfm";  // CTranslate2's search on a converted model keeps them
  EXPECT_EQ(refusal(o, converted), "");
  ModelInfo lm = m;
  lm.decoder_only = true;
  o = {};
  o.replace_unknowns = true;
  EXPECT_NE(refusal(o, lm).find("replace_unknowns"), std::string::npos);
  o = {};
  o.prefix_bias_beta = 0.2;
  EXPECT_NE(refusal(o, lm).find("prefix_bias_beta"), std::string::npos);
  o.prefix_bias_beta = 0.0;
  o.return_logits_vocab = true;  // a decoder-only model's generation keeps them
  EXPECT_EQ(refusal(o, lm), "");
}

TEST(Ct2ResultOptions, GenerationKeepsTheLogitsOfThePromptAndTheContinuation) {
  Translator t(kLm);
  TranslationOptions o;
  o.return_logits_vocab = true;
  o.max_decoding_length = 10;
  const std::vector<std::vector<int64_t>> prompts = {{5, 6}, {}, {7}};
  const auto r = t.generate_batch(prompts, o);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const TranslationHypothesis& h = r[i].hypotheses.at(0);
    ASSERT_EQ(h.logits.size(), h.ids.size() + 1) << "prompt " << i;
    const auto want = t.score_batch_per_token({}, {h.ids})[0];
    for (size_t k = 0; k < h.logits.size(); ++k) {
      const int64_t id = k < h.ids.size() ? h.ids[k] : t.model_info().eos_id;
      EXPECT_NEAR(log_prob_of(h.logits[k], id), want[k], 1e-4) << "prompt " << i;
    }
  }
}

}  // namespace
}  // namespace tfm