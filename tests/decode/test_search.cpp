// Search: exhaustive beam = brute force, greedy = a full-recompute reference, batching and thread
// independence, length limits, n-best, sampling, and agreement with score_pairs.
#include <algorithm>
#include <cmath>
#include <functional>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/core/parallel.h"
#include "tfm/decode/search.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/score.h"
#include "tfm/ops/linear.h"
#include "tfm/ops/softmax.h"

namespace tfm::decode {
namespace {

ModelConfig tiny_config(int64_t vocab = 7) {
  ModelConfig c = ModelConfig::preset("tiny");
  c.d_model = 16, c.heads = 4, c.d_ff = 24, c.encoder_layers = 2, c.decoder_layers = 2;
  c.dropout = 0.0;
  c.src_vocab_size = vocab, c.trg_vocab_size = vocab;
  c.max_length = 40;
  return c;
}

std::unique_ptr<Transformer> tiny_model(uint64_t seed, int64_t vocab = 7) {
  return std::make_unique<Transformer>(tiny_config(vocab), seed);
}

// A random model whose output bias favours EOS by eos_bias nats, so that hypotheses finish at
// varied lengths, and whose output weights are scaled by `sharp` (peaked distributions: a long
// hypothesis can beat a short one under a length penalty, so early stopping matters).
std::unique_ptr<Transformer> eos_model(uint64_t seed, int64_t vocab, float eos_bias,
                                       float sharp = 1.0f) {
  ModelConfig c = tiny_config(vocab);
  c.output_bias = true;
  c.tie_output = false;
  auto m = std::make_unique<Transformer>(c, seed);
  for (auto& [name, t] : m->named_parameters()) {
    float* p = t->data<float>();
    if (name == "output.bias") p[c.eos_id] += eos_bias;
    if (name == "output.weight")
      for (int64_t i = 0; i < t->numel(); ++i) p[i] *= sharp;
  }
  return m;
}

const std::vector<Ids> kSources = {{3, 4, 5}, {6}, {5, 5, 3, 4, 6, 3}, {4, 3}, {}, {6, 6, 5, 4}};

// All token sequences over the non-special ids of length 0 … max_tokens.
std::vector<Ids> all_sequences(int64_t vocab, int64_t max_tokens) {
  std::vector<Ids> out = {{}};
  std::vector<Ids> frontier = {{}};
  for (int64_t n = 1; n <= max_tokens; ++n) {
    std::vector<Ids> next;
    for (const Ids& s : frontier)
      for (int32_t t = 3; t < vocab; ++t) {
        Ids e = s;
        e.push_back(t);
        next.push_back(e);
      }
    out.insert(out.end(), next.begin(), next.end());
    frontier = std::move(next);
  }
  return out;
}

struct Scored {
  Ids tokens;
  double score, log_prob;
};

// Every sequence scored teacher-forced by score_pairs under the options' rule, best first.
std::vector<Scored> brute_force(const Transformer& m, const Ids& src, int64_t max_len,
                                const SearchOptions& o) {
  std::vector<Ids> seqs = all_sequences(m.config().trg_vocab_size, max_len - 1);
  std::vector<Ids> srcs(seqs.size(), src);
  std::vector<double> lp = score_pairs(m, srcs, seqs, 64);
  std::vector<Scored> out;
  for (size_t i = 0; i < seqs.size(); ++i)
    out.push_back(
        {seqs[i], final_score(lp[i], static_cast<int64_t>(seqs[i].size()) + 1, o), lp[i]});
  std::stable_sort(out.begin(), out.end(),
                   [](const Scored& a, const Scored& b) { return a.score > b.score; });
  return out;
}

TEST(Search, ExhaustiveBeamFindsTheBruteForceBest) {
  const int64_t L = 4, V = 7;
  int compared = 0;
  for (uint64_t seed : {1, 2, 3, 4}) {
    // Plain random models rarely end early; seeds 3 and 4 favour EOS so lengths vary.
    auto m = seed <= 2 ? tiny_model(seed, V) : eos_model(seed, V, 1.0f);
    for (double alpha : {0.0, 0.6}) {
      for (bool normalize : {false, true}) {
        if (normalize && alpha != 0.0) continue;
        SearchOptions o;
        o.beam_size = 64;  // (V - 3)^(L - 1): every prefix stays live
        o.n_best = 3;
        o.length_penalty = alpha;
        o.normalize = normalize;
        o.max_length = L;
        for (size_t i = 0; i < 4; ++i) {
          const Ids& src = kSources[i];
          std::vector<Scored> ref = brute_force(*m, src, L, o);
          NBest got = make_beam(o)->run(*m, {src})[0];
          ASSERT_EQ(got.size(), 3u);
          for (size_t k = 0; k < 3; ++k) {
            EXPECT_NEAR(got[k].score, ref[k].score, 1e-4) << "seed " << seed << " alpha " << alpha;
            EXPECT_NEAR(got[k].log_prob, ref[k].log_prob, 1e-4);
            // Sequences only where the ranking is not a numerical near-tie.
            const bool clear = (k == 0 || ref[k - 1].score - ref[k].score > 1e-4) &&
                               ref[k].score - ref[k + 1].score > 1e-4;
            if (clear) {
              EXPECT_EQ(got[k].tokens, ref[k].tokens) << "seed " << seed << " rank " << k;
              ++compared;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 50);
}

// Greedy against a reference that recomputes the full forward over the prefix at each step.
TEST(Search, GreedyMatchesFullRecomputeArgmaxAndBeamOne) {
  auto m = tiny_model(5);
  const ModelConfig& c = m->config();
  SearchOptions o;
  o.max_length = 12;
  std::vector<NBest> greedy = make_greedy(o)->run(*m, kSources);
  SearchOptions b1 = o;
  std::vector<NBest> beam1 = make_beam(b1)->run(*m, kSources);
  NoGradGuard ng;
  for (size_t i = 0; i < kSources.size(); ++i) {
    Ids src = kSources[i];
    src.push_back(static_cast<int32_t>(c.eos_id));
    Ids prefix = {static_cast<int32_t>(c.bos_id)};
    Ids tokens;
    double lp_sum = 0;
    const int64_t max_len = max_target_length(c, o, static_cast<int64_t>(kSources[i].size()));
    for (int64_t t = 0; t < max_len; ++t) {
      Tensor logits = m->forward(Tensor::from_vector<int32_t>({1, (int64_t)src.size()}, src),
                                 Tensor::from_vector<int32_t>({1, (int64_t)prefix.size()}, prefix));
      Tensor lp = log_softmax(logits).contiguous();  // (1, T, V)
      const float* row = lp.data<float>() + (prefix.size() - 1) * c.trg_vocab_size;
      int32_t best = -1;
      for (int32_t v = 0; v < c.trg_vocab_size; ++v) {
        if (v == c.pad_id || v == c.bos_id) continue;
        if (t + 1 == max_len && v != c.eos_id) continue;
        if (best < 0 || row[v] > row[best]) best = v;
      }
      lp_sum += row[best];
      if (best == c.eos_id) break;
      tokens.push_back(best);
      prefix.push_back(best);
    }
    ASSERT_EQ(greedy[i].size(), 1u);
    EXPECT_EQ(greedy[i][0].tokens, tokens) << "sentence " << i;
    EXPECT_NEAR(greedy[i][0].log_prob, lp_sum, 1e-4);
    EXPECT_EQ(greedy[i][0].tokens, beam1[i][0].tokens);
    EXPECT_EQ(greedy[i][0].score, beam1[i][0].score);
  }
}

std::vector<NBest> one_by_one(const Search& s, const Transformer& m, const std::vector<Ids>& src) {
  std::vector<NBest> out;
  for (size_t i = 0; i < src.size(); ++i) out.push_back(s.run(m, {src[i]}, {i})[0]);
  return out;
}

// tol 0: bitwise. Otherwise identical tokens and scores within tol · (1 + |score|).
void expect_same(const std::vector<NBest>& a, const std::vector<NBest>& b, const char* what,
                 double tol = 0) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size()) << what << " sentence " << i;
    for (size_t k = 0; k < a[i].size(); ++k) {
      EXPECT_EQ(a[i][k].tokens, b[i][k].tokens) << what << " sentence " << i << " rank " << k;
      if (tol == 0)
        EXPECT_EQ(a[i][k].score, b[i][k].score) << what << " sentence " << i << " rank " << k;
      else
        EXPECT_NEAR(a[i][k].score, b[i][k].score, tol * (1 + std::abs(b[i][k].score)))
            << what << " sentence " << i << " rank " << k;
    }
  }
}

// A sharded search (o.shard_size != 0) gives the same bits on 1 and 2 threads, and what one batch
// gives up to the last bits of the scores. Leaves the thread count at 2.
void expect_shards_match_one_batch(const Transformer& m, const SearchOptions& o,
                                   const std::vector<Ids>& sources) {
  SearchOptions whole = o;
  whole.shard_size = 0;
  set_threads(1);
  std::vector<NBest> one_thread = make_search(o)->run(m, sources);
  set_threads(2);
  std::vector<NBest> two_threads = make_search(o)->run(m, sources);
  std::vector<NBest> batch = make_search(whole)->run(m, sources);
  expect_same(one_thread, two_threads, "shards on 1 vs 2 threads");
  expect_same(two_threads, batch, "shards vs one batch", 1e-6);
}

// Threads: bitwise. Batching: a row's logits depend in the last bits on how many rows share each
// GEMM (SearchDeterminism below), so scores agree to rounding and the tokens must be identical
// (these sentences have no near-ties).
TEST(Search, BatchedEqualsOneByOneAndThreadIndependent) {
  const int saved = get_threads();
  for (int model_kind = 0; model_kind < 2; ++model_kind) {
    std::unique_ptr<Transformer> m =
        model_kind == 0 ? tiny_model(9, 11)
                        : load_model(std::string(TFM_FIXTURES_DIR) + "/convert/seed004");
    std::vector<Ids> src = {
        {3, 4, 5, 6, 7, 8, 9}, {10}, {5, 9, 3}, {}, {4, 4, 4, 4, 4, 4, 4, 4, 4, 4}};
    for (int64_t beam : {1, 4}) {
      SearchOptions o;
      o.beam_size = beam;
      o.n_best = beam;
      o.max_length = 16;
      auto s = make_search(o);
      set_threads(1);
      std::vector<NBest> batched1 = s->run(*m, src);
      std::vector<NBest> single1 = one_by_one(*s, *m, src);
      set_threads(2);
      std::vector<NBest> batched2 = s->run(*m, src);
      expect_same(batched1, single1, "batched vs one by one", 1e-6);
      expect_same(batched1, batched2, "1 vs 2 threads");
    }
  }
  set_threads(saved);
}

// Sharded search: shards of 2 sentences decoded in parallel give, on 1 and on 2 threads, the
// same bits, and what one batch gives up to the last bits of the scores (batching), for greedy,
// beam and sampling (whose streams follow the sentence ids, not the shard).
TEST(Search, ShardsAreThreadIndependentAndMatchOneBatch) {
  const int saved = get_threads();
  auto m = tiny_model(21, 11);
  for (int kind = 0; kind < 3; ++kind) {
    SearchOptions o;
    o.beam_size = kind == 1 ? 4 : 1;
    o.n_best = o.beam_size;
    o.sampling = kind == 2;
    o.seed = 5;
    o.max_length = 14;
    o.shard_size = 2;
    expect_shards_match_one_batch(*m, o, kSources);
  }
  // Errors name the sentence's index in the whole batch, not in its shard.
  SearchOptions o;
  o.shard_size = 2;
  std::vector<Ids> bad = kSources;
  bad[3] = {4, 99};
  EXPECT_TFM_ERROR(make_search(o)->run(*m, bad), "source 3 has id 99");
  o.shard_size = -2;
  EXPECT_TFM_ERROR(make_search(o), "shard size must be >= 0");
  set_threads(saved);
}

// The automatic shards: half of the call's sentences, within 16 … 64 rows a step; an
// explicit size as given. Never the thread count. Results are those of one batch.
TEST(Search, AutomaticShards) {
  SearchOptions o;  // kAutoShard by default
  EXPECT_EQ(shard_sentences(o, 1000), kShardRows);
  EXPECT_EQ(shard_sentences(o, 100), 50);
  EXPECT_EQ(shard_sentences(o, 60), 30);
  EXPECT_EQ(shard_sentences(o, 32), kShardMinRows);
  EXPECT_EQ(shard_sentences(o, 3), kShardMinRows);
  EXPECT_EQ(shard_sentences(o, 0), kShardMinRows);
  o.beam_size = 4;
  EXPECT_EQ(shard_sentences(o, 1000), kShardRows / 4);
  EXPECT_EQ(shard_sentences(o, 8), kShardMinRows / 4);
  o.beam_size = 3 * kShardRows;  // a beam wider than the rows: a sentence a shard
  EXPECT_EQ(shard_sentences(o, 1000), 1);
  o.shard_size = 5;
  EXPECT_EQ(shard_sentences(o, 1000), 5);
  // Equal parts: no thread is left with a remainder.
  EXPECT_EQ(shard_parts(64, 30), 3);
  EXPECT_EQ(shard_begin(64, 3, 0), 0);
  EXPECT_EQ(shard_begin(64, 3, 1), 21);
  EXPECT_EQ(shard_begin(64, 3, 2), 42);
  EXPECT_EQ(shard_begin(64, 3, 3), 64);
  EXPECT_EQ(shard_parts(6, 2), 3);
  EXPECT_EQ(shard_begin(6, 3, 1), 2);

  const int saved = get_threads();
  auto m = tiny_model(21, 11);
  for (int64_t beam : {1, 4}) {
    SearchOptions a;
    a.beam_size = beam;
    a.n_best = beam;
    a.max_length = 14;
    a.shard_size = SearchOptions::kAutoShard;
    std::vector<Ids> many;  // 40 sentences: 13 + 13 + 14 greedy, 4 × 10 in beam 4
    for (int r = 0; r < 7; ++r) many.insert(many.end(), kSources.begin(), kSources.end());
    many.resize(40);
    expect_shards_match_one_batch(*m, a, many);
  }
  set_threads(saved);
}

// Early stop is exact: the n-best of a search that runs every beam to max length are the same.
TEST(Search, EarlyStopChangesNothing) {
  int64_t long_best = 0;  // the test means something only if long hypotheses win
  for (uint64_t seed : {12, 13, 14}) {
    auto m = eos_model(seed, 11, 1.5f, 4.0f);
    for (double alpha : {0.0, 0.6, 1.0, 2.0}) {
      for (bool normalize : {false, true}) {
        SearchOptions o;
        o.beam_size = 4;
        o.n_best = 4;
        o.length_penalty = alpha;
        o.normalize = normalize;
        o.max_length = 14;
        std::vector<NBest> early = make_beam(o)->run(*m, kSources);
        o.early_stop = false;
        std::vector<NBest> full = make_beam(o)->run(*m, kSources);
        // Not bitwise: stopping early drops rows, and the GEMMs of the others round differently.
        expect_same(early, full, "early stop vs none", 1e-6);
        o.early_stop = true;
        o.min_length = 0;
        for (size_t i = 0; i < full.size(); ++i) long_best += full[i][0].tokens.size() > 6;
      }
    }
  }
  EXPECT_GT(long_best, 20);
}

TEST(Search, LengthLimits) {
  auto m = tiny_model(4);
  for (int64_t beam : {1, 3}) {
    SearchOptions o;
    o.beam_size = beam;
    o.n_best = beam;
    o.min_length = 3;
    o.max_length = 20;
    for (const NBest& nb : make_search(o)->run(*m, kSources))
      for (const Hypothesis& h : nb) EXPECT_GE(h.tokens.size(), 3u);
    o.min_length = 0;
    o.max_length = 2;  // at most one token + EOS
    for (const NBest& nb : make_search(o)->run(*m, kSources))
      for (const Hypothesis& h : nb) EXPECT_LE(h.tokens.size(), 1u);
    o.max_length = 100;
    o.max_length_a = 0.0, o.max_length_b = 3.0;  // a · src_len + b = 3
    for (const NBest& nb : make_search(o)->run(*m, kSources))
      for (const Hypothesis& h : nb) EXPECT_LE(h.tokens.size(), 2u);
  }
  const ModelConfig& c = m->config();
  SearchOptions o;
  EXPECT_EQ(max_target_length(c, o, 3), 16);
  EXPECT_EQ(max_target_length(c, o, 30), c.max_length);
}

TEST(Search, NBestOrderingCountAndScoresMatchScorePairs) {
  auto m = tiny_model(6);
  SearchOptions o;
  o.beam_size = 5;
  o.n_best = 4;
  o.max_length = 10;
  std::vector<NBest> r = make_beam(o)->run(*m, kSources);
  std::vector<Ids> src, trg;
  std::vector<double> got;
  for (size_t i = 0; i < r.size(); ++i) {
    ASSERT_EQ(r[i].size(), 4u) << "sentence " << i;
    for (size_t k = 0; k < r[i].size(); ++k) {
      if (k > 0) {
        EXPECT_GE(r[i][k - 1].score, r[i][k].score);
        EXPECT_NE(r[i][k - 1].tokens, r[i][k].tokens);
      }
      EXPECT_EQ(r[i][k].score, r[i][k].log_prob);  // α = 0
      src.push_back(kSources[i]);
      trg.push_back(r[i][k].tokens);
      got.push_back(r[i][k].log_prob);
    }
  }
  std::vector<double> want = score_pairs(*m, src, trg, 7);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i])));
}

// The search frames sources as the config says (source_bos / source_eos), as score_pairs does: the
// n-best log-probabilities of each framing equal score_pairs' under that framing, and differ from
// the default framing's scores of the same pairs (so neither side ignores the option).
TEST(Search, SourceFramingIsHonouredAsScorePairsDoes) {
  const std::vector<Ids> sources = {{3, 4, 5}, {6}, {5, 5, 3, 4, 6, 3}};
  auto base = tiny_model(12);
  for (auto [bos, eos] : {std::pair{true, true}, {true, false}, {false, false}}) {
    ModelConfig c = tiny_config();
    c.source_bos = bos, c.source_eos = eos;
    Transformer m(c, 12);  // the same weights as `base`
    SearchOptions o;
    o.beam_size = 3;
    o.n_best = 3;
    o.max_length = 8;
    std::vector<NBest> r = make_beam(o)->run(m, sources);
    std::vector<Ids> src, trg;
    std::vector<double> got;
    for (size_t i = 0; i < r.size(); ++i)
      for (const Hypothesis& h : r[i]) {
        src.push_back(sources[i]);
        trg.push_back(h.tokens);
        got.push_back(h.log_prob);
      }
    const std::vector<double> want = score_pairs(m, src, trg, 4);
    const std::vector<double> other = score_pairs(*base, src, trg, 4);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << bos << eos << " " << i;
      EXPECT_GT(std::abs(want[i] - other[i]), 1e-3) << bos << eos << " " << i;
    }
    SearchOptions g;
    g.max_length = 4;
    const int64_t room = c.max_length - (bos ? 1 : 0) - (eos ? 1 : 0);
    EXPECT_NO_THROW(make_greedy(g)->run(m, {Ids(room, 3)}));
    EXPECT_TFM_ERROR(make_greedy(g)->run(m, {Ids(room + 1, 3)}), "the model allows");
    if (!bos && !eos) {
      EXPECT_TFM_ERROR(make_greedy(g)->run(m, {Ids{3}, Ids{}}),
                       "source 1 is empty and the model adds neither BOS nor EOS");
      EXPECT_TFM_ERROR(score_pairs(m, {Ids{3}, Ids{}}, {Ids{4}, Ids{4}}),
                       "source 2 is empty and the model adds neither BOS nor EOS");
    }
  }
}

TEST(Search, SamplingReproducibleAndLimits) {
  auto m = tiny_model(8, 11);
  SearchOptions o;
  o.sampling = true;
  o.max_length = 12;
  o.seed = 42;
  std::vector<NBest> a = make_search(o)->run(*m, kSources);
  std::vector<NBest> a2 = make_search(o)->run(*m, kSources);
  expect_same(a, a2, "same seed");
  expect_same(a, one_by_one(*make_search(o), *m, kSources), "sampling batched vs one by one", 1e-6);
  o.seed = 43;
  std::vector<NBest> b = make_search(o)->run(*m, kSources);
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) differs |= a[i][0].tokens != b[i][0].tokens;
  EXPECT_TRUE(differs) << "another seed gave the same samples for every sentence";

  SearchOptions g;
  g.max_length = 12;
  std::vector<NBest> greedy = make_greedy(g)->run(*m, kSources);
  for (auto tweak : std::vector<std::function<void(SearchOptions&)>>{
           [](SearchOptions& s) { s.top_k = 1; }, [](SearchOptions& s) { s.temperature = 1e-6; },
           [](SearchOptions& s) { s.temperature = 0.0; },
           [](SearchOptions& s) { s.top_p = 1e-9; }}) {
    SearchOptions s = o;
    tweak(s);
    expect_same(make_search(s)->run(*m, kSources), greedy, "degenerate sampling vs greedy");
  }
  // Log-probs of samples are the model's: score_pairs agrees.
  for (size_t i = 0; i < a.size(); ++i) {
    const double want = score_pairs(*m, {kSources[i]}, {a[i][0].tokens})[0];
    EXPECT_NEAR(a[i][0].log_prob, want, 1e-4 * (1 + std::abs(want)));
  }
}

TEST(Search, Errors) {
  auto m = tiny_model(1);
  SearchOptions o;
  o.beam_size = 2;
  o.n_best = 3;
  EXPECT_TFM_ERROR(make_beam(o)->run(*m, kSources), "n_best");
  SearchOptions p;
  EXPECT_TFM_ERROR(make_greedy(p)->run(*m, {Ids(40, 3)}), "source 0 has 40 tokens");
  EXPECT_TFM_ERROR(make_greedy(p)->run(*m, {Ids{3, 9}}), "id 9");
}

}  // namespace
}  // namespace tfm::decode

// Why batched search is not bitwise one-by-one search: linear() of a row depends in the last bits
// on how many rows share the GEMM (dnnl_sgemm up to 8 rows, the matmul primitive above, and
// different kernels/blockings by M within each). This pins that down at the op level, so that a
// future change making rows independent shows here (then tighten BatchedEqualsOneByOne...).
namespace tfm {
TEST(SearchDeterminism, LinearRowDependsOnRowCountOnlyInTheLastBits) {
  NoGradGuard ng;
  const int64_t K = 256, N = 1024;
  Tensor w = testing::random_tensor({N, K}, DType::f32, 1);
  double worst = 0;
  bool any_diff = false;
  Tensor x1 = testing::random_tensor({1, K}, DType::f32, 2);
  Tensor y1 = linear(x1, w).contiguous();
  double scale = 0;
  for (int64_t j = 0; j < N; ++j) scale = std::max(scale, (double)std::abs(y1.data<float>()[j]));
  for (int64_t m : {2, 4, 8, 9, 32, 128}) {
    Tensor xm = testing::random_tensor({m, K}, DType::f32, 3);
    std::copy(x1.data<float>(), x1.data<float>() + K, xm.data<float>());
    Tensor ym = linear(xm, w).contiguous();
    double d = 0;
    for (int64_t j = 0; j < N; ++j)
      d = std::max(d, (double)std::abs(ym.data<float>()[j] - y1.data<float>()[j]));
    any_diff |= d != 0;
    worst = std::max(worst, d / scale);
    std::printf("linear row 0, M = %lld vs M = 1: max |diff| / max |y| = %.3g\n", (long long)m,
                d / scale);
  }
  std::printf("linear row 0 with M in {2..128} vs M = 1: %s\n",
              any_diff ? "differs" : "bitwise equal");
  EXPECT_LT(worst, 1e-5);  // rounding only
}
}  // namespace tfm
