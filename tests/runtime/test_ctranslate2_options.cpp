// The options that give tfm::Translator CTranslate2's search (length_penalty_form, patience,
// renormalize_min_length, score_prefix, max_input_length, return_end_token, attention_framing)
// and the per-token scores, each against what it must equal: score_batch's teacher-forced
// log-probabilities, the same call without the option, or the formula it names.
// python/tests/test_ctranslate2.py checks the whole against the real CTranslate2's answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tfm/translator.h"

namespace tfm {
namespace {

const std::string kModel = std::string(TFM_FIXTURES_DIR) + "/ct2/model";

std::vector<std::vector<int64_t>> sources(const Translator& t) {
  std::vector<std::vector<int64_t>> out;
  for (const char* s : {"haus baum hund", "katze kind", "mann frau sieht der hund", "spielt"})
    out.push_back(t.tokenize_source(s));
  return out;
}

std::vector<std::vector<int64_t>> best_ids(const std::vector<TranslationResult>& r) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& x : r) out.push_back(x.hypotheses.at(0).ids);
  return out;
}

TEST(Ctranslate2Options, PerTokenScoresSumToScoreBatchAndTheSearchsLogProb) {
  Translator t(kModel);
  const auto src = sources(t);
  const auto tr = t.translate_batch(src, TranslationOptions{});
  const auto hyps = best_ids(tr);
  const auto per_token = t.score_batch_per_token(src, hyps);
  const auto totals = t.score_batch(src, hyps);
  for (size_t i = 0; i < src.size(); ++i) {
    ASSERT_EQ(per_token[i].size(), hyps[i].size() + 1);
    const double sum = std::accumulate(per_token[i].begin(), per_token[i].end(), 0.0);
    EXPECT_DOUBLE_EQ(sum, totals[i]);
    EXPECT_NEAR(sum, tr[i].hypotheses[0].log_prob, 1e-4);
    for (float x : per_token[i]) EXPECT_LE(x, 0.0f);
  }
  // max_input_length 3 keeps 2 target tokens (room for BOS and EOS) and 2 source tokens + EOS.
  const auto cut = t.score_batch_per_token(src, hyps, 3);
  for (size_t i = 0; i < src.size(); ++i) {
    const std::vector<int64_t> s(src[i].begin(),
                                 src[i].begin() + std::min<size_t>(2, src[i].size()));
    const std::vector<int64_t> h(hyps[i].begin(),
                                 hyps[i].begin() + std::min<size_t>(2, hyps[i].size()));
    // Scored alone: another batch shape, the same values to float rounding.
    const auto alone = t.score_batch_per_token({s}, {h})[0];
    ASSERT_EQ(cut[i].size(), alone.size()) << "pair " << i;
    for (size_t k = 0; k < alone.size(); ++k)
      EXPECT_NEAR(cut[i][k], alone[k], 1e-5) << "pair " << i;
  }
}

TEST(Ctranslate2Options, PowerLengthPenaltyIsLogProbOverLengthWithEos) {
  Translator t(kModel);
  const auto src = sources(t);
  for (double alpha : {0.5, 1.0}) {
    TranslationOptions o{.search = Search::beam,
                         .beam_size = 3,
                         .length_penalty = alpha,
                         .length_penalty_form = LengthPenalty::power};
    for (const auto& r : t.translate_batch(src, o))
      for (const auto& h : r.hypotheses)
        EXPECT_NEAR(h.score, h.log_prob / std::pow(static_cast<double>(h.ids.size() + 1), alpha),
                    1e-9);
  }
  EXPECT_EQ(parse_length_penalty("power"), LengthPenalty::power);
  EXPECT_THROW(parse_length_penalty("wu"), InvalidArgument);
}

TEST(Ctranslate2Options, RenormalizedMinLengthAddsMinusLogOneMinusEos) {
  Translator t(kModel);
  const auto src = sources(t);
  const TranslationOptions plain{.min_decoding_length = 1};
  TranslationOptions renorm = plain;
  renorm.renormalize_min_length = true;
  const auto a = t.translate_batch(src, plain);
  const auto b = t.translate_batch(src, renorm);
  // log p(EOS) at the first step: the score of an empty target.
  const auto eos_first =
      t.score_batch_per_token(src, std::vector<std::vector<int64_t>>(src.size()));
  for (size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(a[i].hypotheses[0].ids, b[i].hypotheses[0].ids);  // greedy: the same argmax
    const double add = -std::log1p(-std::exp(double{eos_first[i][0]}));
    EXPECT_GT(add, 0.0);
    EXPECT_NEAR(b[i].hypotheses[0].log_prob, a[i].hypotheses[0].log_prob + add, 1e-5);
  }
}

TEST(Ctranslate2Options, PatienceStopsAfterThatManyFinishedHypotheses) {
  Translator t(kModel);
  const auto src = sources(t);
  TranslationOptions o{.search = Search::beam,
                       .beam_size = 4,
                       .num_hypotheses = 4,
                       .length_penalty = 1.0,
                       .length_penalty_form = LengthPenalty::power};
  o.patience = 1.0;
  for (const auto& r : t.translate_batch(src, o)) EXPECT_EQ(r.hypotheses.size(), 4u);
  o.patience = 0.5;  // 2 hypotheses finish: 4 cannot be returned
  EXPECT_THROW(t.translate_batch(src, o), InvalidArgument);
  o.num_hypotheses = 2;
  for (const auto& r : t.translate_batch(src, o)) EXPECT_EQ(r.hypotheses.size(), 2u);
  o.patience = -1;
  EXPECT_THROW(t.translate_batch(src, o), InvalidArgument);
}

TEST(Ctranslate2Options, ScoresWithoutThePrefixLeaveOutItsLogProbs) {
  Translator t(kModel);
  const auto src = sources(t);
  std::vector<std::vector<int64_t>> prefixes;
  for (const auto& s : src) prefixes.push_back({s.front()});
  TranslationOptions o{.search = Search::beam, .beam_size = 2};
  const auto counted = t.translate_batch(src, prefixes, o);
  o.score_prefix = false;
  const auto after = t.translate_batch(src, prefixes, o);
  const auto forced = t.score_batch_per_token(src, prefixes);
  for (size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(after[i].hypotheses[0].ids, counted[i].hypotheses[0].ids);
    EXPECT_EQ(after[i].hypotheses[0].log_prob, counted[i].hypotheses[0].log_prob);
    EXPECT_NEAR(after[i].hypotheses[0].score, counted[i].hypotheses[0].score - forced[i][0], 1e-5);
  }
}

TEST(Ctranslate2Options, InputLengthEndTokenAndAttentionColumns) {
  Translator t(kModel);
  const auto src = sources(t);
  TranslationOptions o{.return_attention = true};
  const auto full = t.translate_batch(src, o);
  o.max_input_length = 3;  // 2 tokens + EOS
  std::vector<std::vector<int64_t>> two;
  for (const auto& s : src) two.emplace_back(s.begin(), s.begin() + std::min<size_t>(2, s.size()));
  const auto cut = t.translate_batch(src, o);
  const auto want = t.translate_batch(two, TranslationOptions{.return_attention = true});
  for (size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(cut[i].hypotheses[0].ids, want[i].hypotheses[0].ids);
    EXPECT_EQ(cut[i].source_truncated, src[i].size() > 2);
  }
  o = {.return_end_token = true, .return_attention = true, .attention_framing = false};
  const auto ends = t.translate_batch(src, o);
  for (size_t i = 0; i < src.size(); ++i) {
    auto ids = full[i].hypotheses[0].ids;
    ids.push_back(t.model_info().eos_id);
    EXPECT_EQ(ends[i].hypotheses[0].ids, ids);
    const auto& rows = ends[i].hypotheses[0].attention;
    ASSERT_EQ(rows.size(), full[i].hypotheses[0].attention.size());
    for (size_t k = 0; k < rows.size(); ++k) {
      const auto& framed = full[i].hypotheses[0].attention[k];  // the source, then EOS
      EXPECT_EQ(rows[k], std::vector<float>(framed.begin(), framed.end() - 1));
    }
  }
  EXPECT_THROW(t.translate_batch(src, TranslationOptions{.max_input_length = 1}), InvalidArgument);
}

TEST(Ctranslate2Options, SuppressedSequencesAreNeverGenerated) {
  Translator t(kModel);
  const auto src = sources(t);
  const auto plain = t.translate_batch(src, TranslationOptions{});
  // The first token of the first output never; the second output's first two never in a row.
  const int64_t a = plain[0].hypotheses[0].ids.at(0);
  const auto& two = plain[1].hypotheses[0].ids;
  for (Search search : {Search::greedy, Search::beam, Search::sampling}) {
    TranslationOptions o{.search = search, .beam_size = search == Search::beam ? 3 : 1};
    o.suppress_sequences = {{a}, {two.at(0), two.at(1)}};
    for (const auto& r : t.translate_batch(src, o)) {
      const auto& ids = r.hypotheses.at(0).ids;
      EXPECT_EQ(std::count(ids.begin(), ids.end(), a), 0);
      for (size_t k = 0; k + 1 < ids.size(); ++k)
        EXPECT_FALSE(ids[k] == two[0] && ids[k + 1] == two[1]) << search_name(search);
    }
  }
  TranslationOptions bad;
  bad.suppress_sequences = {{}};
  EXPECT_THROW(t.translate_batch(src, bad), InvalidArgument);
  bad.suppress_sequences = {{t.model_info().trg_vocab_size}};
  EXPECT_THROW(t.translate_batch(src, bad), InvalidArgument);
}

}  // namespace
}  // namespace tfm
