// Target prefixes and returned attention in the search: a forced prefix against brute force over
// the hypotheses that start with it, its log-probabilities against score_pairs, and the attention
// rows against a full teacher-forced forward pass, for greedy, beam and sampling, batched,
// sharded and one by one.
#include <algorithm>
#include <cmath>

#include "support/attention_reference.h"
#include "support/test_util.h"
#include "tfm/decode/search.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/score.h"

namespace tfm::decode {
namespace {

// A random model whose output bias favours EOS by eos_bias nats, so hypotheses end at varied
// lengths (as test_search.cpp's eos_model).
std::unique_ptr<Transformer> eos_model(uint64_t seed, int64_t vocab, float eos_bias) {
  ModelConfig c = ModelConfig::preset("tiny");
  c.d_model = 16, c.heads = 4, c.d_ff = 24, c.encoder_layers = 2, c.decoder_layers = 2;
  c.dropout = 0.0;
  c.src_vocab_size = vocab, c.trg_vocab_size = vocab;
  c.max_length = 40;
  c.output_bias = true;
  c.tie_output = false;
  auto m = std::make_unique<Transformer>(c, seed);
  for (auto& [name, t] : m->named_parameters())
    if (name == "output.bias") t->data<float>()[c.eos_id] += eos_bias;
  return m;
}

const std::vector<Ids> kSources = {{3, 4, 5}, {6}, {5, 5, 3, 4, 6, 3}, {4, 3}, {6, 6, 5, 4}};

bool starts_with(const Ids& s, const Ids& prefix) {
  return s.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), s.begin());
}

// Every sequence of 0 … max_tokens ordinary tokens (ids 3 …) that starts with prefix.
std::vector<Ids> sequences_with(const Ids& prefix, int64_t vocab, int64_t max_tokens) {
  std::vector<Ids> out = {prefix}, frontier = {prefix};
  while (!frontier.empty() && static_cast<int64_t>(frontier[0].size()) < max_tokens) {
    std::vector<Ids> next;
    for (const Ids& s : frontier)
      for (int32_t t = 3; t < vocab; ++t) {
        next.push_back(s);
        next.back().push_back(t);
      }
    out.insert(out.end(), next.begin(), next.end());
    frontier = std::move(next);
  }
  return out;
}

// Every hypothesis: starts with its prefix, log_prob is score_pairs', and (when asked) the
// attention rows sum to 1 and are the full forward's.
void check_hypotheses(const Transformer& m, const std::vector<Ids>& src,
                      const std::vector<Ids>& prefixes, const std::vector<NBest>& got,
                      bool attention, const std::string& what) {
  ASSERT_EQ(got.size(), src.size());
  const int64_t specials = m.config().seq_format().source_specials();
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(got[i].empty()) << what << " sentence " << i;
    for (const Hypothesis& h : got[i]) {
      const Ids& prefix = prefixes.empty() ? Ids{} : prefixes[i];
      EXPECT_TRUE(starts_with(h.tokens, prefix)) << what << " sentence " << i;
      const double want = score_pairs(m, {src[i]}, {h.tokens})[0];
      EXPECT_NEAR(h.log_prob, want, 1e-4 * (1 + std::abs(want))) << what << " sentence " << i;
      if (!attention) {
        EXPECT_TRUE(h.attention.empty());
        continue;
      }
      const int64_t width = static_cast<int64_t>(src[i].size()) + specials;
      ASSERT_EQ(h.attention.size(), h.tokens.size() * static_cast<size_t>(width))
          << what << " sentence " << i;
      const auto ref = testing::forward_cross_attention(m, src[i], h.tokens);
      for (size_t t = 0; t < h.tokens.size(); ++t) {
        ASSERT_EQ(static_cast<int64_t>(ref[t].size()), width);
        double sum = 0;
        for (int64_t s = 0; s < width; ++s) {
          const float got = h.attention[t * static_cast<size_t>(width) + static_cast<size_t>(s)];
          sum += got;
          EXPECT_NEAR(got, ref[t][s], 2e-6) << what << " sentence " << i << " row " << t;
        }
        EXPECT_NEAR(sum, 1.0, 1e-5) << what << " sentence " << i << " row " << t;
      }
    }
  }
}

// Exhaustive beam search (the beam holds every continuation) with a prefix finds the brute-force
// best of the sequences that start with it; the scores count the prefix's tokens.
TEST(SearchPrefix, ExhaustiveBeamFindsTheBruteForceBestWithThePrefix) {
  const int64_t L = 4, V = 7;
  const std::vector<Ids> prefixes = {{4}, {5, 3}, {}, {6, 6}, {3}};
  int compared = 0;
  for (uint64_t seed : {3, 4}) {
    auto m = eos_model(seed, V, 1.0f);
    std::vector<std::vector<Ids>> all(kSources.size());  // per sentence: every candidate
    std::vector<std::vector<double>> all_lp(kSources.size());
    for (size_t i = 0; i < kSources.size(); ++i) {
      all[i] = sequences_with(prefixes[i], V, L - 1);
      all_lp[i] = score_pairs(*m, std::vector<Ids>(all[i].size(), kSources[i]), all[i], 128);
    }
    for (double alpha : {0.0, 0.6}) {
      SearchOptions o;
      o.beam_size = 64;  // (V - 3)^(L - 1): every continuation of a prefix stays live
      o.n_best = 3;
      o.length_penalty = alpha;
      o.max_length = L;
      const std::vector<NBest> got = make_beam(o)->run(*m, kSources, {}, prefixes);
      for (size_t i = 0; i < kSources.size(); ++i) {
        const std::vector<Ids>& seqs = all[i];
        const std::vector<double>& lp = all_lp[i];
        std::vector<std::pair<double, size_t>> ref;  // (score, index), best first
        for (size_t k = 0; k < seqs.size(); ++k)
          ref.push_back({final_score(lp[k], static_cast<int64_t>(seqs[k].size()) + 1, o), k});
        std::stable_sort(ref.begin(), ref.end(),
                         [](const auto& a, const auto& b) { return a.first > b.first; });
        ASSERT_EQ(got[i].size(), 3u);
        for (size_t k = 0; k < 3; ++k) {
          EXPECT_NEAR(got[i][k].score, ref[k].first, 1e-4) << "seed " << seed << " sentence " << i;
          EXPECT_NEAR(got[i][k].log_prob, lp[ref[k].second], 1e-4);
          EXPECT_TRUE(starts_with(got[i][k].tokens, prefixes[i]));
          const bool clear = (k == 0 || ref[k - 1].first - ref[k].first > 1e-4) &&
                             (k + 1 >= ref.size() || ref[k].first - ref[k + 1].first > 1e-4);
          if (clear) {
            EXPECT_EQ(got[i][k].tokens, seqs[ref[k].second]) << "seed " << seed << " rank " << k;
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 20);
}

// Greedy, beam and sampling, batched, in shards and one by one, with and without prefixes and
// attention: prefixes are kept and counted, attention rows are the full forward's.
TEST(SearchPrefix, EverySearchKeepsThePrefixAndReturnsTheForwardsAttention) {
  auto m = load_model(std::string(TFM_FIXTURES_DIR) + "/convert/seed004");  // BOS + EOS framing
  const std::vector<Ids> src = {{3, 4, 5, 6, 7, 8, 9}, {10}, {5, 9, 3}, {4, 4, 4, 4, 4, 4, 4, 4}};
  const std::vector<Ids> prefixes = {{7, 8}, {}, {12}, {5, 5, 5}};
  for (int kind = 0; kind < 3; ++kind)
    for (int64_t shard : {0, 2})
      for (bool attention : {false, true})
        for (bool with_prefix : {false, true}) {
          SearchOptions o;
          o.beam_size = kind == 1 ? 3 : 1;
          o.n_best = o.beam_size;
          o.sampling = kind == 2;
          o.seed = 11;
          o.max_length = 14;
          o.shard_size = shard;
          o.return_attention = attention;
          const std::vector<Ids> pre = with_prefix ? prefixes : std::vector<Ids>{};
          const std::string what =
              "kind " + std::to_string(kind) + " shard " + std::to_string(shard) + " attention " +
              std::to_string(attention) + " prefix " + std::to_string(with_prefix);
          const std::vector<NBest> got = make_search(o)->run(*m, src, {}, pre);
          check_hypotheses(*m, src, pre, got, attention, what);
          // Asking for attention changes nothing else, bit for bit.
          SearchOptions plain = o;
          plain.return_attention = false;
          const std::vector<NBest> without = make_search(plain)->run(*m, src, {}, pre);
          for (size_t i = 0; i < got.size(); ++i)
            for (size_t k = 0; k < got[i].size(); ++k) {
              EXPECT_EQ(got[i][k].tokens, without[i][k].tokens) << what;
              EXPECT_EQ(got[i][k].score, without[i][k].score) << what;
            }
        }
}

// Forcing greedy search through the start of its own output changes nothing; an empty prefix is
// no prefix.
TEST(SearchPrefix, GreedyThroughItsOwnStartIsUnchanged) {
  auto m = eos_model(8, 11, 0.5f);
  SearchOptions o;
  o.max_length = 16;
  o.shard_size = 0;
  const std::vector<NBest> free = make_greedy(o)->run(*m, kSources);
  std::vector<Ids> prefixes;
  for (const NBest& nb : free)
    prefixes.push_back(Ids(nb[0].tokens.begin(),
                           nb[0].tokens.begin() + static_cast<int64_t>(nb[0].tokens.size() / 2)));
  const std::vector<NBest> forced = make_greedy(o)->run(*m, kSources, {}, prefixes);
  const std::vector<NBest> empty =
      make_greedy(o)->run(*m, kSources, {}, std::vector<Ids>(kSources.size()));
  int nonempty = 0;
  for (size_t i = 0; i < free.size(); ++i) {
    nonempty += !prefixes[i].empty();
    EXPECT_EQ(forced[i][0].tokens, free[i][0].tokens) << "sentence " << i;
    EXPECT_EQ(forced[i][0].log_prob, free[i][0].log_prob) << "sentence " << i;
    EXPECT_EQ(empty[i][0].tokens, free[i][0].tokens) << "sentence " << i;
  }
  EXPECT_GT(nonempty, 2);
}

// A prefix takes its share of the max length (raised to fit the prefix and EOS), and a prefix the
// caps leave no room for, or holding a special or unknown id, is an error.
TEST(SearchPrefix, LengthsAndErrors) {
  auto m = eos_model(2, 7, -2.0f);  // rarely ends early: lengths reach the limits
  const ModelConfig& c = m->config();
  SearchOptions o;
  o.max_length_a = 0.0, o.max_length_b = 3.0;  // 3 tokens with EOS from the source
  EXPECT_EQ(max_target_length(c, o, 5, 0), 3);
  EXPECT_EQ(max_target_length(c, o, 5, 2), 3);
  EXPECT_EQ(max_target_length(c, o, 5, 6), 7);  // raised: the prefix and EOS
  for (int64_t beam : {1, 3}) {
    o.beam_size = beam;
    o.n_best = beam;
    const std::vector<Ids> prefixes = {{4}, {5, 6, 4, 3, 3}, {}, {3, 3}, {6}};
    const std::vector<NBest> r = make_search(o)->run(*m, kSources, {}, prefixes);
    for (size_t i = 0; i < r.size(); ++i)
      for (const Hypothesis& h : r[i]) {
        EXPECT_TRUE(starts_with(h.tokens, prefixes[i]));
        EXPECT_LE(h.tokens.size(), std::max<size_t>(2, prefixes[i].size()));
      }
  }
  SearchOptions p;
  p.max_length = 4;
  EXPECT_NO_THROW(make_greedy(p)->run(*m, {Ids{3}}, {}, {Ids{3, 4, 5}}));
  EXPECT_TFM_ERROR(make_greedy(p)->run(*m, {Ids{3}}, {}, {Ids{3, 4, 5, 6}}),
                   "prefix 0 has 4 tokens; the max length 4 leaves room for 3 before EOS");
  EXPECT_TFM_ERROR(make_greedy(p)->run(*m, {Ids{3}, Ids{4}}, {}, {Ids{3}, Ids{4, 2}}),
                   "prefix 1 has id 2");
  EXPECT_TFM_ERROR(make_greedy(p)->run(*m, {Ids{3}}, {}, {Ids{7}}), "prefix 0 has id 7");
  EXPECT_TFM_ERROR(make_greedy(p)->run(*m, {Ids{3}}, {}, {Ids{3}, Ids{4}}),
                   "2 prefixes for 1 sources");
}

}  // namespace
}  // namespace tfm::decode
