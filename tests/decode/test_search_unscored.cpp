// Greedy search without scores (SearchOptions::scores false, unscored_greedy): the tokens of the
// scored greedy search under each option that shapes a step, found from the masked logits alone,
// and the sum of the chosen logits (from the model's full forward pass) in place of a score.
#include <cmath>

#include "search_test_model.h"
#include "support/test_util.h"

namespace tfm::decode {
namespace {

using testing::full_logits;
using testing::kSources;
using testing::search_model;

TEST(UnscoredGreedy, OnlyWhereTheTokensNeedNoScores) {
  SearchOptions o;
  o.scores = false;
  EXPECT_TRUE(unscored_greedy(o));
  auto with = [&](auto change) {
    SearchOptions x = o;
    change(x);
    return unscored_greedy(x);
  };
  EXPECT_FALSE(with([](SearchOptions& x) { x.scores = true; }));
  EXPECT_FALSE(with([](SearchOptions& x) { x.beam_size = 2; }));
  EXPECT_FALSE(with([](SearchOptions& x) { x.sampling = true; }));
  EXPECT_FALSE(with([](SearchOptions& x) { x.alternatives = true; }));
  EXPECT_FALSE(with([](SearchOptions& x) { x.prefix_bias = 0.5; }));
  EXPECT_FALSE(with([](SearchOptions& x) { x.length_penalty = 0.6; }));
  EXPECT_FALSE(with([](SearchOptions& x) { x.normalize = true; }));
  EXPECT_FALSE(with([](SearchOptions& x) { x.early_stop = false; }));
  EXPECT_TRUE(with([](SearchOptions& x) { x.early_stop = false, x.patience = 1.0; }));
  // CTranslate2's rule stops at the first finished hypothesis whatever its length penalty.
  EXPECT_TRUE(with([](SearchOptions& x) { x.patience = 1.0, x.length_penalty = 1.0; }));
  EXPECT_FALSE(with([](SearchOptions& x) { x.patience = 2.0, x.length_penalty = 1.0; }));
  EXPECT_TRUE(with([](SearchOptions& x) { x.rule = SearchRule::transformers; }));
  EXPECT_TRUE(with([](SearchOptions& x) {
    x.rule = SearchRule::transformers, x.length_penalty = 1.0, x.early_stop = false;
  }));
  EXPECT_FALSE(with([](SearchOptions& x) {
    x.on_step = std::make_shared<const StepCallback>([](const Step&) { return false; });
  }));
}

TEST(UnscoredGreedy, TheScoredSearchsTokensUnderEveryStepOption) {
  std::vector<std::pair<const char*, SearchOptions>> cases;
  SearchOptions plain;
  plain.max_length = 14;
  cases.emplace_back("plain", plain);
  SearchOptions x = plain;
  x.min_length = 3, x.renormalize_min_length = true;
  cases.emplace_back("min length, renormalised", x);
  x = plain;
  x.suppress_sequences = {{5}, {4, 6}}, x.repetition_penalty = 1.5, x.no_repeat_ngram_size = 2;
  cases.emplace_back("logits processors", x);
  x = plain;
  x.end_ids = {2, 7}, x.min_length = 1;
  cases.emplace_back("two end tokens", x);
  x = plain;
  x.cut_at_max_length = true, x.max_length = 4, x.patience = 1.0;
  cases.emplace_back("CTranslate2's last step and patience", x);
  x = plain;
  x.patience = 1.0, x.length_penalty = 1.0, x.power_penalty = true, x.score_prefix = false;
  cases.emplace_back("CTranslate2's rule under a length penalty", x);
  x = plain;
  x.rule = SearchRule::transformers, x.no_repeat_ngram_size = 2, x.min_length = 2;
  x.renormalize_min_length = true;
  cases.emplace_back("generate()'s rule", x);
  x = plain;
  x.shard_size = 2;
  cases.emplace_back("shards", x);
  const std::vector<Ids> prefixes = {{4}, {}, {5, 6}, {}, {3}};
  for (uint64_t seed : {1, 2, 3}) {
    const auto m = search_model(seed);
    for (const auto& [what, scored] : cases) {
      SearchOptions unscored = scored;
      unscored.scores = false;
      ASSERT_TRUE(unscored_greedy(unscored)) << what;
      for (bool prefixed : {false, true}) {
        const std::vector<Ids>& p = prefixed ? prefixes : std::vector<Ids>{};
        const auto want = make_search(scored)->run(*m, kSources, {}, p);
        const auto got = make_search(unscored)->run(*m, kSources, {}, p);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(got[i].size(), 1u);
          EXPECT_EQ(got[i][0].tokens, want[i][0].tokens)
              << what << (prefixed ? ", prefixed" : "") << ", seed " << seed << ", sentence " << i;
          EXPECT_EQ(got[i][0].eos, want[i][0].eos) << what << ", sentence " << i;
          EXPECT_EQ(got[i][0].end_id, want[i][0].end_id) << what << ", sentence " << i;
        }
      }
    }
  }
}

TEST(UnscoredGreedy, ItsScoreIsTheSumOfTheChosenLogits) {
  const auto m = search_model(4);
  SearchOptions o;
  o.max_length = 12;
  o.scores = false;
  const auto got = make_greedy(o)->run(*m, kSources);
  for (size_t i = 0; i < kSources.size(); ++i) {
    const Hypothesis& h = got[i][0];
    ASSERT_TRUE(h.eos);
    double sum = 0.0;
    Ids so_far;
    for (size_t t = 0; t <= h.tokens.size(); ++t) {
      const std::vector<double> logits = full_logits(*m, kSources[i], so_far);
      const int32_t chosen =
          t < h.tokens.size() ? h.tokens[t] : static_cast<int32_t>(m->config().eos_id);
      sum += logits[static_cast<size_t>(chosen)];
      if (t < h.tokens.size()) so_far.push_back(chosen);
    }
    EXPECT_NEAR(h.log_prob, sum, 1e-4 * (1 + std::abs(sum))) << "sentence " << i;
    EXPECT_EQ(h.score, h.log_prob);
  }
}

}  // namespace
}  // namespace tfm::decode
