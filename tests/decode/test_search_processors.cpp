// CTranslate2's logits processors and end tokens in the tfm rule's searches (repetition_penalty,
// no_repeat_ngram_size, end_ids): greedy against a full-recompute reference that applies each
// rule to the model's logits itself, beam search and sampling against the properties they
// guarantee. tools/ct2_diff.py checks the same options against the real CTranslate2.
#include <algorithm>
#include <cmath>
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

struct Reference {
  Ids tokens;
  double log_prob = 0.0;
  int32_t end = -1;
};

// Greedy search recomputed from the full forward pass at every step, each rule applied to the
// last position's logits in double: the repetition penalty on each token held, -inf for n-gram
// repeats, then log-softmax, then the conventions (PAD/BOS never, no end token before min_length,
// the first end token alone at the last position).
Reference reference_greedy(const Transformer& m, const Ids& source, const SearchOptions& o) {
  const ModelConfig& c = m.config();
  const Ids ends = o.end_ids.empty() ? Ids{static_cast<int32_t>(c.eos_id)} : o.end_ids;
  Reference r;
  const int64_t max_len = max_target_length(c, o, std::ssize(source));
  const int64_t V = c.trg_vocab_size;
  for (int64_t t = 0; t < max_len; ++t) {
    const std::vector<double> last = full_logits(m, source, r.tokens);
    std::vector<double> x = last;
    for (int32_t v : std::set<int32_t>(r.tokens.begin(), r.tokens.end()))
      x[v] = last[v] < 0 ? last[v] * o.repetition_penalty : last[v] / o.repetition_penalty;
    const int64_t n = o.no_repeat_ngram_size, len = std::ssize(r.tokens);
    for (int64_t i = 0; n > 0 && i + n <= len; ++i)
      if (std::equal(r.tokens.begin() + i, r.tokens.begin() + i + n - 1, r.tokens.end() - (n - 1)))
        x[r.tokens[i + n - 1]] = -INFINITY;
    double top = -INFINITY, sum = 0.0;
    for (double v : x) top = std::max(top, v);
    for (double v : x) sum += std::exp(v - top);
    int32_t best = -1;
    for (int32_t v = 0; v < V; ++v) {
      const bool end = std::find(ends.begin(), ends.end(), v) != ends.end();
      if (v == c.pad_id || v == c.bos_id) continue;
      if (t + 1 == max_len ? v != ends.front() : end && t < o.min_length) continue;
      if (x[v] != -INFINITY && (best < 0 || x[v] > x[best])) best = v;
    }
    r.log_prob += x[best] - top - std::log(sum);
    if (std::find(ends.begin(), ends.end(), best) != ends.end()) {
      r.end = best;
      break;
    }
    r.tokens.push_back(best);
    if (o.cut_at_max_length && t + 2 >= max_len) break;  // CTranslate2's: no end token
  }
  return r;
}

void expect_greedy_matches_reference(const Transformer& m, const SearchOptions& o,
                                     const char* what) {
  const std::vector<NBest> got = make_greedy(o)->run(m, kSources);
  NoGradGuard ng;
  for (size_t i = 0; i < kSources.size(); ++i) {
    const Reference want = reference_greedy(m, kSources[i], o);
    ASSERT_EQ(got[i].size(), 1u);
    EXPECT_EQ(got[i][0].tokens, want.tokens) << what << ", sentence " << i;
    EXPECT_NEAR(got[i][0].log_prob, want.log_prob, 1e-4) << what << ", sentence " << i;
    EXPECT_EQ(got[i][0].end_id, want.end) << what << ", sentence " << i;
  }
}

bool repeats_ngram(const Ids& tokens, int64_t n) {
  std::set<Ids> seen;
  for (int64_t i = 0; i + n <= std::ssize(tokens); ++i)
    if (!seen.insert(Ids(tokens.begin() + i, tokens.begin() + i + n)).second) return true;
  return false;
}

TEST(SearchProcessors, GreedyMatchesTheFullRecomputeReference) {
  auto m = model(11);
  SearchOptions o;
  o.max_length = 16;
  o.min_length = 12;  // long outputs, where repeats happen
  const std::vector<NBest> plain = make_greedy(o)->run(*m, kSources);
  bool plain_repeats = false;
  for (const NBest& nb : plain) plain_repeats |= repeats_ngram(nb[0].tokens, 2);
  ASSERT_TRUE(plain_repeats) << "the fixture must repeat bigrams for the bans to show";
  o.repetition_penalty = 1.7;
  expect_greedy_matches_reference(*m, o, "repetition_penalty 1.7");
  o.repetition_penalty = 0.6;  // < 1 favours repeats
  expect_greedy_matches_reference(*m, o, "repetition_penalty 0.6");
  o.repetition_penalty = 1.0;
  o.no_repeat_ngram_size = 2;
  expect_greedy_matches_reference(*m, o, "no_repeat_ngram_size 2");
  for (const NBest& nb : make_greedy(o)->run(*m, kSources))
    EXPECT_FALSE(repeats_ngram(nb[0].tokens, 2));
  o.no_repeat_ngram_size = 3;
  o.repetition_penalty = 1.3;
  expect_greedy_matches_reference(*m, o, "both");
}

TEST(SearchProcessors, EndTokensStopTheSearchAndEosBecomesOrdinary) {
  auto m = model(11);
  SearchOptions o;
  o.max_length = 14;
  o.end_ids = {5, 4};  // not the model's EOS (2)
  expect_greedy_matches_reference(*m, o, "end ids 5 4");
  const std::vector<NBest> got = make_greedy(o)->run(*m, kSources);
  bool ended_by_other = false;
  for (const NBest& nb : got) {
    for (int32_t t : nb[0].tokens) EXPECT_TRUE(t != 5 && t != 4);
    ended_by_other |= nb[0].end_id == 4;
  }
  EXPECT_TRUE(ended_by_other) << "the fixture must end a hypothesis on the second end token";
  o.min_length = 4;
  expect_greedy_matches_reference(*m, o, "end ids 5 4, min length 4");
  o.end_ids = {2, 5};
  o.min_length = 0;
  expect_greedy_matches_reference(*m, o, "end ids 2 5");
}

TEST(SearchProcessors, BeamAndSamplingHonourTheBansAndEndTokens) {
  auto m = model(11);
  SearchOptions o;
  o.max_length = 16;
  o.min_length = 10;
  o.beam_size = 4;
  o.n_best = 4;
  o.no_repeat_ngram_size = 2;
  o.end_ids = {6, 8};
  for (const NBest& nb : make_beam(o)->run(*m, kSources)) {
    ASSERT_EQ(nb.size(), 4u);
    for (const Hypothesis& h : nb) {
      EXPECT_FALSE(repeats_ngram(h.tokens, 2));
      EXPECT_TRUE(h.end_id == 6 || h.end_id == 8);
      for (int32_t t : h.tokens) EXPECT_TRUE(t != 6 && t != 8);
      EXPECT_GE(std::ssize(h.tokens), o.min_length);
    }
  }
  o.beam_size = 1;
  o.n_best = 1;
  o.sampling = true;
  o.temperature = 2.0;
  o.no_repeat_ngram_size = 1;  // no token twice
  o.min_length = 3;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    o.seed = seed;
    for (const NBest& nb : make_sampling(o)->run(*m, kSources)) {
      EXPECT_FALSE(repeats_ngram(nb[0].tokens, 1)) << "seed " << seed;
      for (int32_t t : nb[0].tokens) EXPECT_TRUE(t != 6 && t != 8);
    }
  }
}

// The log-softmax (double) at the position after `prefix`, from the full forward pass, the end
// tokens removed before it: CTranslate2's alternatives' expansion.
std::vector<double> expansion_reference(const Transformer& m, const Ids& source,
                                        const Ids& prefix) {
  const ModelConfig& c = m.config();
  Ids src = source, input = {static_cast<int32_t>(c.bos_id)};
  src.push_back(static_cast<int32_t>(c.eos_id));
  input.insert(input.end(), prefix.begin(), prefix.end());
  const Tensor logits = m.forward(Tensor::from_vector<int32_t>({1, std::ssize(src)}, src),
                                  Tensor::from_vector<int32_t>({1, std::ssize(input)}, input))
                            .contiguous();  // (1, T, V)
  const int64_t V = c.trg_vocab_size;
  const float* last = logits.data<float>() + (std::ssize(input) - 1) * V;
  std::vector<double> x(last, last + V);
  x[c.eos_id] = -INFINITY;
  double top = -INFINITY, sum = 0.0;
  for (double v : x) top = std::max(top, v);
  for (double v : x) sum += std::exp(v - top);
  for (double& v : x) v = v - top - std::log(sum);
  return x;
}

TEST(SearchProcessors, AlternativesExpandTheFirstFreePositionAndContinueEach) {
  auto m = model(11);
  const ModelConfig& c = m->config();
  SearchOptions o;
  o.max_length = 14;
  o.beam_size = 2;
  o.n_best = 4;
  o.alternatives = true;
  o.length_penalty = 1.0;
  o.power_penalty = true;
  const std::vector<Ids> prefixes = {{4}, {}, {6, 3}, {}, {5}};
  const std::vector<NBest> got = make_alternatives(o)->run(*m, kSources, {}, prefixes);
  SearchOptions inner = o;  // alternatives: the continuation's rules (search.h)
  inner.n_best = 1;
  NoGradGuard ng;
  for (size_t i = 0; i < kSources.size(); ++i) {
    const std::vector<double> lp = expansion_reference(*m, kSources[i], prefixes[i]);
    std::vector<int32_t> order;
    for (int32_t v = 0; v < c.trg_vocab_size; ++v)
      if (v != c.pad_id && v != c.bos_id && v != c.eos_id) order.push_back(v);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return lp[a] > lp[b]; });
    ASSERT_EQ(got[i].size(), 4u) << "sentence " << i;
    for (size_t k = 0; k < 4; ++k) {
      const Hypothesis& h = got[i][k];
      Ids pre = prefixes[i];
      pre.push_back(order[k]);
      ASSERT_GE(h.tokens.size(), pre.size());
      EXPECT_EQ(Ids(h.tokens.begin(), h.tokens.begin() + std::ssize(pre)), pre)
          << "sentence " << i << " alternative " << k;
      const Hypothesis want = make_beam(inner)->run(*m, {kSources[i]}, {}, {pre})[0][0];
      EXPECT_EQ(h.tokens, want.tokens);
      const int64_t len = std::ssize(h.tokens) - std::ssize(pre) + 1;
      EXPECT_NEAR(h.score, lp[order[k]] + (h.log_prob - h.prefix_log_prob) / double(len), 1e-4);
    }
  }
  o.min_alternative_prob = 0.2;  // keeps the alternatives down to the first less likely
  for (size_t i = 0; i < kSources.size(); ++i) {
    const std::vector<double> lp = expansion_reference(*m, kSources[i], prefixes[i]);
    const NBest nb = make_alternatives(o)->run(*m, {kSources[i]}, {}, {prefixes[i]})[0];
    size_t want = 0;
    std::vector<double> probs;
    for (int32_t v = 3; v < c.trg_vocab_size; ++v) probs.push_back(std::exp(lp[v]));
    std::sort(probs.rbegin(), probs.rend());
    while (want < 4 && probs[want] >= 0.2) ++want;
    EXPECT_EQ(nb.size(), want) << "sentence " << i;
  }
}

TEST(SearchProcessors, CutAtTheMaxLengthEndsWithoutAnEndToken) {
  auto m = model(11);
  SearchOptions o;
  o.max_length = 9;
  o.min_length = 6;
  o.cut_at_max_length = true;
  o.repetition_penalty = 1.2;
  expect_greedy_matches_reference(*m, o, "cut at max length 9");
  o.beam_size = 3;
  o.n_best = 3;
  o.length_penalty = 1.0;
  o.power_penalty = true;
  o.patience = 1.0;
  bool cut = false;
  for (const NBest& nb : make_beam(o)->run(*m, kSources))
    for (const Hypothesis& h : nb) {
      EXPECT_LE(std::ssize(h.tokens), o.max_length - 1);
      const int64_t len = std::ssize(h.tokens) + (h.eos ? 1 : 0);
      EXPECT_NEAR(h.score, h.log_prob / static_cast<double>(len), 1e-9);
      if (!h.eos) EXPECT_EQ(std::ssize(h.tokens), o.max_length - 1);
      cut |= !h.eos;
    }
  EXPECT_TRUE(cut) << "the fixture must reach the max length";
}

// The coverage penalty leaves greedy search's tokens alone and lowers each score by at most
// β · Σ log(min(coverage, 1)) of the returned rows (the end token's row, which it counts too,
// only raises the coverage). tools/ct2_diff.py checks the exact value against CTranslate2.
TEST(SearchProcessors, CoveragePenaltyLowersTheScoreByTheUncoveredSource) {
  auto m = model(11);
  SearchOptions o;
  o.max_length = 12;
  o.return_attention = true;
  const std::vector<NBest> plain = make_greedy(o)->run(*m, kSources);
  o.coverage_penalty = 0.5;
  const std::vector<NBest> covered = make_greedy(o)->run(*m, kSources);
  bool lowered = false;
  for (size_t i = 0; i < kSources.size(); ++i) {
    const Hypothesis &a = plain[i][0], &b = covered[i][0];
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.attention, b.attention);
    const int64_t width = std::ssize(kSources[i]) + 1;  // the source and EOS
    double bound = 0.0;
    for (int64_t col = 0; col < width; ++col) {
      double sum = 0.0;
      for (size_t at = static_cast<size_t>(col); at < b.attention.size(); at += width)
        sum += b.attention[at];
      if (sum > 0) bound += std::log(std::min(sum, 1.0));
    }
    const double penalty = b.score - a.score;
    EXPECT_LE(penalty, 1e-6) << "sentence " << i;
    if (!b.tokens.empty())  // the rows cover every position a little: the bound holds
      EXPECT_GE(penalty, o.coverage_penalty * bound - 1e-5) << "sentence " << i;
    lowered |= penalty < -1e-3;
  }
  EXPECT_TRUE(lowered);
}

TEST(SearchProcessors, Errors) {
  auto m = model(11);
  SearchOptions o;
  o.repetition_penalty = 0.0;
  EXPECT_THROW(make_greedy(o)->run(*m, kSources), Error);
  o.repetition_penalty = 1.0;
  o.end_ids = {9};
  EXPECT_THROW(make_greedy(o)->run(*m, kSources), Error);
}

}  // namespace
}  // namespace tfm::decode
