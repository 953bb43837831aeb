// CTranslate2's return_logits_vocab (Hypothesis::logits) and prefix_bias_beta
// (SearchOptions::prefix_bias) in the tfm rule's searches, against references recomputed from the
// model's full forward pass: each hypothesis' logits rows are the last position's logits of its
// own tokens so far (the processors applied, the end tokens at -inf before min_length), and the
// biased greedy search is CTranslate2's BiasedDecoder written out again in double:
// log((1 - β)·softmax + β·onehot(prefix token)) while the hypothesis follows the prefix.
// tools/ct2_diff.py checks both against the real CTranslate2.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "decode/search_test_model.h"
#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/decode/search.h"

namespace tfm::decode {
namespace {

using testing::full_logits;
using testing::kSources;

std::unique_ptr<Transformer> model(uint64_t seed) {
  return testing::search_model(seed);
}

// What return_logits reports for the step after `held` (the hypothesis' tokens so far): the
// repetition penalty on the tokens held, -inf for the end token before min_length.
std::vector<double> reported(const Transformer& m, const Ids& source, const Ids& held,
                             const SearchOptions& o) {
  std::vector<double> x = full_logits(m, source, held);
  for (int32_t v : std::set<int32_t>(held.begin(), held.end()))
    x[v] = x[v] < 0 ? x[v] * o.repetition_penalty : x[v] / o.repetition_penalty;
  if (std::ssize(held) < o.min_length) x[m.config().eos_id] = -INFINITY;
  return x;
}

std::vector<double> log_softmax(const std::vector<double>& x) {
  double top = -INFINITY, sum = 0.0;
  for (double v : x) top = std::max(top, v);
  for (double v : x) sum += std::exp(v - top);
  std::vector<double> out;
  for (double v : x) out.push_back(v - top - std::log(sum));
  return out;
}

// Each hypothesis holds one row per step (its tokens', then the end token's), each the reference's
// for its own tokens so far; and the rows' log-softmax at its tokens sums to its log_prob.
void expect_rows_match(const Transformer& m, const std::vector<NBest>& got, const SearchOptions& o,
                       const std::vector<Ids>& prefixes, const char* what) {
  const int64_t V = m.config().trg_vocab_size;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(got[i].empty()) << what;
    for (const Hypothesis& h : got[i]) {
      const int64_t steps = std::ssize(h.tokens) + (h.eos ? 1 : 0);
      ASSERT_EQ(std::ssize(h.logits), steps * V) << what << ", sentence " << i;
      double log_prob = 0.0;
      for (int64_t t = 0; t < steps; ++t) {
        const Ids held(h.tokens.begin(), h.tokens.begin() + t);
        const std::vector<double> want = reported(m, kSources[i], held, o);
        for (int64_t v = 0; v < V; ++v) {
          const float g = h.logits[static_cast<size_t>(t * V + v)];
          if (std::isinf(want[v]))  // disabled: CTranslate2's lowest float
            EXPECT_EQ(g, std::numeric_limits<float>::lowest()) << what << ", sentence " << i;
          else
            EXPECT_NEAR(g, want[v], 1e-4) << what << ", sentence " << i << " step " << t;
        }
        const int32_t token = t < std::ssize(h.tokens) ? h.tokens[t] : m.config().eos_id;
        log_prob += log_softmax(want)[token];
      }
      // The log-probability the search reports is the rows' (masks never renormalise here).
      if (o.min_length == 0 && prefixes.empty()) {
        EXPECT_NEAR(h.log_prob, log_prob, 1e-4) << what << ", sentence " << i;
      }
    }
  }
}

TEST(SearchLogits, GreedyRowsAreTheFullRecomputeLogits) {
  auto m = model(11);
  SearchOptions o;
  o.max_length = 12;
  o.return_logits = true;
  expect_rows_match(*m, make_greedy(o)->run(*m, kSources), o, {}, "greedy");
  o.repetition_penalty = 1.6;
  o.min_length = 3;
  expect_rows_match(*m, make_greedy(o)->run(*m, kSources), o, {}, "penalty, min length");
  // A target prefix's forced steps have rows too.
  const std::vector<Ids> prefixes = {{4, 4}, {}, {7}, {3, 5, 6}, {}};
  const auto got = make_greedy(o)->run(*m, kSources, {}, prefixes);
  expect_rows_match(*m, got, o, prefixes, "prefixes");
  // Without return_logits, nothing is kept.
  o.return_logits = false;
  for (const NBest& nb : make_greedy(o)->run(*m, kSources)) EXPECT_TRUE(nb[0].logits.empty());
}

TEST(SearchLogits, BeamAndSamplingRowsFollowEachHypothesis) {
  auto m = model(5);
  SearchOptions o;
  o.max_length = 10;
  o.return_logits = true;
  o.beam_size = 4;
  o.n_best = 4;
  expect_rows_match(*m, make_beam(o)->run(*m, kSources), o, {}, "beam 4");
  o.patience = 1.0;  // CTranslate2's beam search
  o.length_penalty = 1.0;
  o.power_penalty = true;
  expect_rows_match(*m, make_beam(o)->run(*m, kSources), o, {}, "beam 4, patience 1");
  SearchOptions s;
  s.max_length = 10;
  s.return_logits = true;
  s.sampling = true;
  s.temperature = 1.5;  // the rows are before the temperature
  s.seed = 3;
  expect_rows_match(*m, make_sampling(s)->run(*m, kSources), s, {}, "sampling");
}

// CTranslate2's beam search of width 1 with a soft prefix, recomputed: at step t, while the
// hypothesis has followed the prefix, log((1 - β)·p + β·onehot(prefix[t])), else log p; the
// best token (PAD/BOS never) is taken, an end token finishing the hypothesis. score: the biased
// sum (length penalty 0); log_prob: the model's own.
struct Biased {
  Ids tokens;
  double score = 0.0, log_prob = 0.0;
};

Biased reference_biased_greedy(const Transformer& m, const Ids& source, const Ids& prefix,
                               double beta, int64_t max_len) {
  const ModelConfig& c = m.config();
  Biased r;
  bool diverged = false;
  for (int64_t t = 0; t < max_len; ++t) {
    const std::vector<double> lp = log_softmax(full_logits(m, source, r.tokens));
    std::vector<double> b = lp;
    if (!diverged && t < std::ssize(prefix))
      for (int32_t v = 0; v < c.trg_vocab_size; ++v)
        b[v] = std::log((1.0 - beta) * std::exp(lp[v]) + (v == prefix[t] ? beta : 0.0));
    int32_t best = -1;
    for (int32_t v = 0; v < c.trg_vocab_size; ++v) {
      if (v == c.pad_id || v == c.bos_id) continue;
      if (t + 1 == max_len && v != c.eos_id) continue;
      if (best < 0 || b[v] > b[best]) best = v;
    }
    r.score += b[best];
    r.log_prob += lp[best];
    diverged = diverged || t >= std::ssize(prefix) || best != prefix[t];
    if (best == c.eos_id) break;
    r.tokens.push_back(best);
  }
  return r;
}

TEST(SearchPrefixBias, GreedyIsTheBiasedDistributionsArgmax) {
  auto m = model(11);
  const std::vector<Ids> prefixes = {{4, 4, 6}, {}, {7, 3}, {3, 5, 6, 8}, {5}};
  for (double beta : {0.1, 0.5, 0.95}) {
    SearchOptions o;
    o.max_length = 12;
    o.prefix_bias = beta;
    const auto got = make_greedy(o)->run(*m, kSources, {}, prefixes);
    bool followed = false, left = false;
    for (size_t i = 0; i < kSources.size(); ++i) {
      const Biased want = reference_biased_greedy(*m, kSources[i], prefixes[i], beta, 12);
      ASSERT_EQ(got[i].size(), 1u);
      EXPECT_EQ(got[i][0].tokens, want.tokens) << "beta " << beta << ", sentence " << i;
      EXPECT_NEAR(got[i][0].score, want.score, 1e-4) << "beta " << beta << ", sentence " << i;
      EXPECT_NEAR(got[i][0].log_prob, want.log_prob, 1e-4) << "beta " << beta;
      const Ids& p = prefixes[i];
      if (p.empty()) continue;
      const bool starts = std::ssize(want.tokens) >= std::ssize(p) &&
                          std::equal(p.begin(), p.end(), want.tokens.begin());
      (starts ? followed : left) = true;
    }
    // A strong bias follows every prefix (the fixture's), a weak one leaves some.
    if (beta == 0.95) {
      EXPECT_TRUE(followed && !left);
    }
    if (beta == 0.1) {
      EXPECT_TRUE(left) << "the fixture must leave a prefix at beta 0.1";
    }
  }
}

TEST(SearchPrefixBias, BeamFollowsAStrongBiasAndKeepsTheModelsLogProb) {
  auto m = model(5);
  const std::vector<Ids> prefixes = {{4, 4, 6}, {7}, {7, 3}, {3, 5, 6, 8}, {5, 5}};
  SearchOptions o;
  o.max_length = 12;
  o.beam_size = 3;
  o.n_best = 3;
  o.patience = 1.0;
  o.prefix_bias = 0.999;
  o.return_logits = true;
  const auto got = make_beam(o)->run(*m, kSources, {}, prefixes);
  for (size_t i = 0; i < kSources.size(); ++i) {
    const Hypothesis& best = got[i].at(0);
    ASSERT_GE(best.tokens.size(), prefixes[i].size());
    EXPECT_TRUE(std::equal(prefixes[i].begin(), prefixes[i].end(), best.tokens.begin()))
        << "sentence " << i;
    for (const Hypothesis& h : got[i]) {
      // log_prob is the model's own: the rows' log-softmax at the hypothesis' tokens.
      double lp = 0.0;
      for (size_t t = 0; t <= h.tokens.size(); ++t) {
        const Ids held(h.tokens.begin(), h.tokens.begin() + static_cast<ptrdiff_t>(t));
        const int32_t token = t < h.tokens.size() ? h.tokens[t] : m->config().eos_id;
        lp += log_softmax(full_logits(*m, kSources[i], held))[token];
      }
      EXPECT_NEAR(h.log_prob, lp, 1e-4) << "sentence " << i;
    }
    // Each prefix token's probability rises to (1 - β)·p + β: the best scores above its own.
    EXPECT_GT(best.score, best.log_prob) << "sentence " << i;
  }
  // β 0 is the plain search, and biasing without prefixes changes nothing.
  o.prefix_bias = 0.3;
  const auto unbiased = make_beam(o)->run(*m, kSources);
  o.prefix_bias = 0.0;
  const auto plain = make_beam(o)->run(*m, kSources);
  for (size_t i = 0; i < kSources.size(); ++i)
    for (size_t k = 0; k < plain[i].size(); ++k) {
      EXPECT_EQ(unbiased[i].at(k).tokens, plain[i][k].tokens);
      EXPECT_DOUBLE_EQ(unbiased[i][k].score, plain[i][k].score);
    }
}

TEST(SearchPrefixBias, RefusedWhereItHasNoMeaning) {
  auto m = model(5);
  SearchOptions o;
  o.prefix_bias = 1.0;
  EXPECT_THROW(make_greedy(o)->run(*m, kSources), Error);
  o.prefix_bias = 0.5;
  o.sampling = true;
  EXPECT_THROW(make_sampling(o)->run(*m, kSources), Error);
}

}  // namespace
}  // namespace tfm::decode