// tfm::Translator against the pieces it is built from: the search run sentence by sentence,
// score_pairs, and its own results under other batchings, thread counts and concurrent callers;
// target prefixes and returned attention against score_batch and the model's full forward.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stop_token>
#include <thread>

#include "support/attention_reference.h"
#include "support/test_util.h"
#include "tfm/core/parallel.h"
#include "tfm/data/length_batches.h"
#include "tfm/decode/search.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/score.h"
#include "tfm/runtime/batch_search.h"
#include "tfm/translator.h"
#ifdef TFM_WITH_CUDA
#include "tfm/core/cuda/runtime.h"
#endif

namespace tfm {
namespace {

const std::string kModel = std::string(TFM_FIXTURES_DIR) + "/convert/seed004";

std::vector<std::vector<int64_t>> fixture_sources() {
  std::ifstream in(kModel + "/src.ids");
  std::vector<std::vector<int64_t>> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream s(line);
    std::vector<int64_t> ids;
    for (int64_t v; s >> v;) ids.push_back(v);
    out.push_back(ids);
  }
  // More sentences than a batch, of varied lengths, one empty, one repeated.
  std::vector<std::vector<int64_t>> all = out;
  for (const auto& x : out)
    all.push_back(std::vector<int64_t>(x.begin(), x.begin() + x.size() / 2));
  all.push_back({});
  all.push_back(out[0]);
  return all;
}

void expect_same(const std::vector<TranslationResult>& a, const std::vector<TranslationResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].hypotheses.size(), b[i].hypotheses.size()) << "sentence " << i;
    for (size_t k = 0; k < a[i].hypotheses.size(); ++k) {
      EXPECT_EQ(a[i].hypotheses[k].ids, b[i].hypotheses[k].ids) << "sentence " << i;
      // Other batch shapes round differently in the GEMMs: the ids must agree, the scores to
      // float precision.
      const double tol = 1e-5 * (1 + std::abs(a[i].hypotheses[k].log_prob));
      EXPECT_NEAR(a[i].hypotheses[k].score, b[i].hypotheses[k].score, tol) << "sentence " << i;
      EXPECT_NEAR(a[i].hypotheses[k].log_prob, b[i].hypotheses[k].log_prob, tol)
          << "sentence " << i;
    }
  }
}

TEST(Translator, IdsAgreeWithTheSearchRunOneSentenceAtATime) {
  Translator t(kModel);
  TranslationOptions o;
  o.search = Search::beam;
  o.beam_size = 4;
  o.num_hypotheses = 2;
  const auto sources = fixture_sources();
  const auto got = t.translate_batch(sources, o);

  auto model = load_model(kModel);
  decode::SearchOptions so;
  so.beam_size = 4;
  so.n_best = 2;
  auto search = decode::make_search(so);
  ASSERT_EQ(got.size(), sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].empty()) {
      EXPECT_TRUE(got[i].hypotheses.empty());
      continue;
    }
    const auto want = search->run(*model, {Ids(sources[i].begin(), sources[i].end())});
    ASSERT_EQ(got[i].hypotheses.size(), want[0].size());
    for (size_t k = 0; k < want[0].size(); ++k) {
      EXPECT_EQ(got[i].hypotheses[k].ids,
                std::vector<int64_t>(want[0][k].tokens.begin(), want[0][k].tokens.end()));
      EXPECT_NEAR(got[i].hypotheses[k].score, want[0][k].score, 1e-5);
      EXPECT_TRUE(got[i].hypotheses[k].text.empty());
    }
  }
}

TEST(Translator, ResultsDoNotDependOnBatchingOrThreads) {
  const auto sources = fixture_sources();
  TranslationOptions o;
  o.search = Search::beam;
  o.beam_size = 3;
  o.num_hypotheses = 3;
  const auto want =
      Translator(kModel, {.intra_threads = 1, .max_batch_size = 1}).translate_batch(sources, o);
  expect_same(want,
              Translator(kModel, {.intra_threads = 2, .inter_threads = 2, .max_batch_size = 3})
                  .translate_batch(sources, o));
  expect_same(want, Translator(kModel, {.max_batch_size = 64, .max_batch_tokens = 12})
                        .translate_batch(sources, o));
}

TEST(Translator, ConcurrentCallersShareOneModel) {
  const auto sources = fixture_sources();
  Translator t(kModel, {.inter_threads = 2, .max_batch_size = 2});
  TranslationOptions greedy, beam;
  beam.search = Search::beam;
  beam.beam_size = 4;
  const auto want_greedy = t.translate_batch(sources, greedy);
  const auto want_beam = t.translate_batch(sources, beam);
  std::vector<TranslationResult> got_greedy, got_beam;
  std::thread a([&] { got_greedy = t.translate_batch(sources, greedy); });
  std::thread b([&] { got_beam = t.translate_batch(sources, beam); });
  a.join();
  b.join();
  expect_same(want_greedy, got_greedy);
  expect_same(want_beam, got_beam);
}

TEST(Translator, ScoresAreScorePairsAndTheSearchsLogProbs) {
  Translator t(kModel, {.max_batch_size = 2});
  auto sources = fixture_sources();
  std::erase_if(sources, [](const auto& x) { return x.empty(); });
  TranslationOptions o;
  o.search = Search::beam;
  o.beam_size = 2;
  const auto tr = t.translate_batch(sources, o);
  std::vector<std::vector<int64_t>> targets;
  for (const auto& r : tr) targets.push_back(r.hypotheses.at(0).ids);
  const std::vector<double> got = t.score_batch(sources, targets);

  auto model = load_model(kModel);
  std::vector<Ids> s, g;
  for (const auto& x : sources) s.emplace_back(x.begin(), x.end());
  for (const auto& y : targets) g.emplace_back(y.begin(), y.end());
  const std::vector<double> want = score_pairs(*model, s, g, 2);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-6 * (1 + std::abs(want[i])));
    EXPECT_NEAR(got[i], tr[i].hypotheses[0].log_prob, 1e-4 * (1 + std::abs(want[i])));
  }
}

TEST(Translator, WithoutScoresTheSameIdsAndNaNScores) {
  // Greedy search without scores picks from the logits (no log-softmax); beam search computes
  // them and the Translator leaves them out alike.
  Translator t(kModel, {.max_batch_size = 3});
  const auto sources = fixture_sources();
  for (int64_t beam : {1, 3}) {
    TranslationOptions o;
    o.beam_size = beam;
    o.search = search_for(beam, false);
    o.min_decoding_length = 1;
    TranslationOptions off = o;
    off.return_scores = false;
    const auto want = t.translate_batch(sources, o), got = t.translate_batch(sources, off);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].hypotheses.size(), want[i].hypotheses.size()) << "sentence " << i;
      for (size_t k = 0; k < got[i].hypotheses.size(); ++k) {
        const TranslationHypothesis& h = got[i].hypotheses[k];
        EXPECT_EQ(h.ids, want[i].hypotheses[k].ids) << "beam " << beam << " sentence " << i;
        EXPECT_TRUE(std::isnan(h.score) && std::isnan(h.log_prob)) << "sentence " << i;
        EXPECT_TRUE(std::isfinite(want[i].hypotheses[k].score));
      }
    }
  }
}

// One prefix per source (some empty); ids of the fixture's target vocabulary, not special.
std::vector<std::vector<int64_t>> fixture_prefixes(size_t n) {
  std::vector<std::vector<int64_t>> p(n);
  for (size_t i = 0; i < n; ++i)
    if (i % 3 != 2) p[i] = {static_cast<int64_t>(3 + i % 17), static_cast<int64_t>(5 + i % 3)};
  return p;
}

bool starts_with(const std::vector<int64_t>& ids, const std::vector<int64_t>& prefix) {
  return ids.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), ids.begin());
}

// Greedy, beam and sampling through prefixes: every hypothesis starts with its sentence's
// prefix, log_prob is still score_batch's (teacher-forced) score of the whole hypothesis, an empty
// prefix is none, and the batching changes nothing but rounding.
TEST(Translator, TargetPrefixIsForcedAndScoredAsScoreBatch) {
  Translator t(kModel, {.max_batch_size = 4});
  const auto sources = fixture_sources();
  const auto prefixes = fixture_prefixes(sources.size());
  TranslationOptions greedy, beam, sampling;
  beam.search = Search::beam;
  beam.beam_size = 4;
  beam.num_hypotheses = 2;
  beam.length_penalty = 0.6;
  sampling.search = Search::sampling;
  sampling.seed = 3;
  for (const TranslationOptions& o : {greedy, beam, sampling}) {
    const auto got = t.translate_batch(sources, prefixes, o);
    const auto plain = t.translate_batch(sources, o);
    ASSERT_EQ(got.size(), sources.size());
    std::vector<std::vector<int64_t>> src, hyp;
    std::vector<double> log_prob;
    for (size_t i = 0; i < sources.size(); ++i) {
      if (sources[i].empty()) {
        EXPECT_TRUE(got[i].hypotheses.empty());
        continue;
      }
      ASSERT_EQ(got[i].hypotheses.size(), static_cast<size_t>(o.num_hypotheses));
      for (size_t k = 0; k < got[i].hypotheses.size(); ++k) {
        const TranslationHypothesis& h = got[i].hypotheses[k];
        EXPECT_TRUE(starts_with(h.ids, prefixes[i])) << "sentence " << i;
        if (prefixes[i].empty()) {
          EXPECT_EQ(h.ids, plain[i].hypotheses[k].ids) << "sentence " << i;
        }
        EXPECT_TRUE(h.attention.empty());
        src.push_back(sources[i]);
        hyp.push_back(h.ids);
        log_prob.push_back(h.log_prob);
      }
    }
    const std::vector<double> want = t.score_batch(src, hyp);
    for (size_t j = 0; j < want.size(); ++j)
      EXPECT_NEAR(log_prob[j], want[j], 1e-4 * (1 + std::abs(want[j]))) << "hypothesis " << j;
    expect_same(got,
                Translator(kModel, {.intra_threads = 2, .inter_threads = 2, .max_batch_size = 1})
                    .translate_batch(sources, prefixes, o));
  }
}

TEST(Translator, TargetPrefixErrorsNameTheProblem) {
  Translator t(kModel);
  const std::vector<std::vector<int64_t>> src = {{3, 4}, {5}};
  auto error = [&](const std::vector<std::vector<int64_t>>& prefixes, TranslationOptions o = {}) {
    return testing::error_of([&] { t.translate_batch(src, prefixes, o); });
  };
  EXPECT_NE(error({{3}}).find("target_prefix has 1 entries for 2 sources"), std::string::npos);
  EXPECT_NE(error({{3}, {4, 99}})
                .find("target_prefix 2: token id 99 is outside the target "
                      "vocabulary [0, 23)"),
            std::string::npos);
  EXPECT_NE(error({{2}, {}}).find("target_prefix 1: token id 2 is the model's EOS"),
            std::string::npos);
  EXPECT_NE(error({{}, std::vector<int64_t>(5, 3)}, {.max_decoding_length = 5})
                .find("target_prefix 2 has 5 tokens; max_decoding_length 5 leaves room for 4 "
                      "before EOS"),
            std::string::npos);
  EXPECT_NE(error({{}, std::vector<int64_t>(64, 3)})
                .find("the model's 64 positions leave room for 63 before EOS"),
            std::string::npos);
  // The longest prefix that fits: EOS follows it at once.
  const auto r = t.translate_batch(src, {{}, {3, 4, 5, 6}}, {.max_decoding_length = 5});
  EXPECT_EQ(r[1].hypotheses.at(0).ids, (std::vector<int64_t>{3, 4, 5, 6}));
  EXPECT_TRUE(t.translate_batch(src, {}, TranslationOptions{}).size() == 2);  // {}: no prefixes
}

// return_attention: one row per target id (the prefix's too) over the source as the model frames
// it (seed004: BOS, the ids, EOS), each summing to 1 and equal to the last decoder layer's
// cross-attention, averaged over heads, of a full teacher-forced forward pass; asking for it
// changes nothing else.
TEST(Translator, AttentionIsTheFullForwardsCrossAttention) {
  Translator t(kModel, {.max_batch_size = 8});
  auto model = load_model(kModel);
  const auto sources = fixture_sources();
  const auto prefixes = fixture_prefixes(sources.size());
  TranslationOptions greedy, beam, sampling;
  beam.search = Search::beam;
  beam.beam_size = 3;
  beam.num_hypotheses = 3;
  sampling.search = Search::sampling;
  sampling.seed = 9;
  int rows = 0;
  for (TranslationOptions o : {greedy, beam, sampling})
    for (bool with_prefix : {false, true}) {
      const std::vector<std::vector<int64_t>> pre =
          with_prefix ? prefixes : std::vector<std::vector<int64_t>>{};
      const auto without = t.translate_batch(sources, pre, o);
      o.return_attention = true;
      const auto got = t.translate_batch(sources, pre, o);
      for (size_t i = 0; i < sources.size(); ++i) {
        ASSERT_EQ(got[i].hypotheses.size(), without[i].hypotheses.size());
        const Ids src(sources[i].begin(), sources[i].end());
        for (size_t k = 0; k < got[i].hypotheses.size(); ++k) {
          const TranslationHypothesis& h = got[i].hypotheses[k];
          EXPECT_EQ(h.ids, without[i].hypotheses[k].ids);
          EXPECT_EQ(h.score, without[i].hypotheses[k].score);  // bitwise: the same search
          ASSERT_EQ(h.attention.size(), h.ids.size()) << "sentence " << i;
          const auto ref =
              testing::forward_cross_attention(*model, src, Ids(h.ids.begin(), h.ids.end()));
          for (size_t r = 0; r < h.attention.size(); ++r, ++rows) {
            ASSERT_EQ(h.attention[r].size(), sources[i].size() + 2) << "sentence " << i;
            double sum = 0;
            for (size_t s = 0; s < h.attention[r].size(); ++s) {
              sum += h.attention[r][s];
              EXPECT_NEAR(h.attention[r][s], ref[r][s], 1e-5) << "sentence " << i << " row " << r;
            }
            EXPECT_NEAR(sum, 1.0, 1e-5) << "sentence " << i << " row " << r;
          }
        }
      }
    }
  EXPECT_GT(rows, 200);
}

TEST(Translator, StreamWritesWhatTheBatchMethodReturns) {
  Translator t(kModel, {.inter_threads = 2, .max_batch_size = 2});
  const auto sources = fixture_sources();
  std::string input;
  for (const auto& s : sources) {
    for (size_t k = 0; k < s.size(); ++k) input += (k ? " " : "") + std::to_string(s[k]);
    input += "\n";
  }
  TranslationOptions o;
  o.search = Search::beam;
  o.beam_size = 2;
  o.num_hypotheses = 2;
  const auto want = t.translate_batch(sources, o);
  for (bool n_best : {false, true}) {
    std::istringstream in(input);
    std::ostringstream out;
    // One window holding the whole input: the same batches as translate_batch, the same bits.
    t.translate_stream(in, out, o, {.ids = true, .n_best = n_best, .read_ahead = 100});
    std::ostringstream expect;
    for (size_t i = 0; i < want.size(); ++i) {
      auto text = [](const std::vector<int64_t>& ids) {
        std::string s;
        for (size_t k = 0; k < ids.size(); ++k) s += (k ? " " : "") + std::to_string(ids[k]);
        return s;
      };
      if (!n_best) {
        expect << (want[i].hypotheses.empty() ? "" : text(want[i].hypotheses[0].ids)) << "\n";
        continue;
      }
      for (const auto& h : want[i].hypotheses) {
        char score[32];
        std::snprintf(score, sizeof score, "%.6f", h.score);
        expect << i << " ||| " << text(h.ids) << " ||| " << score << "\n";
      }
    }
    EXPECT_EQ(out.str(), expect.str()) << "n_best " << n_best;
  }
  // Windows of 3 lines (other batches): the same lines, ids and line numbers.
  std::istringstream in(input);
  std::ostringstream out;
  t.translate_stream(in, out, o, {.ids = true, .read_ahead = 3});
  std::istringstream lines(out.str());
  size_t n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    ASSERT_LT(n, want.size());
    std::string w;
    if (!want[n].hypotheses.empty())
      for (size_t k = 0; k < want[n].hypotheses[0].ids.size(); ++k)
        w += (k ? " " : "") + std::to_string(want[n].hypotheses[0].ids[k]);
    EXPECT_EQ(line, w) << "line " << n + 1;
  }
  EXPECT_EQ(n, want.size());
}

std::string id_lines(const std::vector<std::vector<int64_t>>& rows) {
  std::string text;
  for (const auto& r : rows) {
    for (size_t k = 0; k < r.size(); ++k) text += (k ? " " : "") + std::to_string(r[k]);
    text += "\n";
  }
  return text;
}

// A prefix file beside the input: the lines translate_batch gives with those prefixes, in one
// window and in windows of 3 lines; a prefix file of another length, or a bad prefix, is an
// error naming the file and the line.
TEST(Translator, StreamTakesATargetPrefixALine) {
  Translator t(kModel, {.inter_threads = 2, .max_batch_size = 2});
  const auto sources = fixture_sources();
  const auto prefixes = fixture_prefixes(sources.size());
  TranslationOptions o;
  o.search = Search::beam;
  o.beam_size = 2;
  std::vector<std::vector<int64_t>> want;
  for (const auto& r : t.translate_batch(sources, prefixes, o))
    want.push_back(r.hypotheses.empty() ? std::vector<int64_t>{} : r.hypotheses[0].ids);
  // The prefixes are followed, and change lines: the stream below cannot pass by ignoring them.
  const auto plain = t.translate_batch(sources, o);
  int with_prefix = 0, changed = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].empty() || prefixes[i].empty()) continue;
    ++with_prefix;
    EXPECT_TRUE(starts_with(want[i], prefixes[i])) << "sentence " << i;
    changed += want[i] != plain[i].hypotheses.at(0).ids;
  }
  EXPECT_GE(with_prefix, 4);
  EXPECT_GE(changed, 3);
  for (int64_t read_ahead : {100, 3}) {
    std::istringstream in(id_lines(sources)), pre(id_lines(prefixes));
    std::ostringstream out;
    t.translate_stream(in, out, o,
                       {.ids = true,
                        .read_ahead = read_ahead,
                        .target_prefix = &pre,
                        .target_prefix_name = "pre.ids"});
    EXPECT_EQ(out.str(), id_lines(want)) << "read_ahead " << read_ahead;
  }
  auto error = [&](const std::string& input, const std::string& prefix_text) {
    std::istringstream in(input), pre(prefix_text);
    std::ostringstream out;
    return testing::error_of([&] {
      t.translate_stream(
          in, out, o,
          {.ids = true, .read_ahead = 2, .target_prefix = &pre, .target_prefix_name = "pre.ids"},
          "in.ids");
    });
  };
  EXPECT_NE(error("17 14\n15\n3 4\n", "3\n\n")
                .find("pre.ids ends at line 2, short of the "
                      "input's line 3 (in.ids)"),
            std::string::npos);
  EXPECT_NE(error("17 14\n15\n", "3\n\n4\n")
                .find("pre.ids has more lines than the input "
                      "(in.ids, 2 lines)"),
            std::string::npos);
  EXPECT_NE(error("17 14\n15\n", "3\n4 99\n").find("pre.ids:2"), std::string::npos);
  EXPECT_NE(error("17 14\n15\n", "3\n4 2\n").find("pre.ids:2: token id 2 is the model's EOS"),
            std::string::npos);
  EXPECT_EQ(error("17 14\n15\n", "3\n\n"), "");
}

// A sink that refuses every byte, as a full disk does.
struct FullBuf : std::streambuf {
  int overflow(int) override { return traits_type::eof(); }
  std::streamsize xsputn(const char*, std::streamsize) override { return 0; }
};

TEST(Translator, AFailingOutputIsAnError) {
  Translator t(kModel);
  std::istringstream in("17 14 11\n15 17\n");
  FullBuf buf;
  std::ostream out(&buf);
  try {
    t.translate_stream(in, out, {}, {.ids = true}, "in.ids");
    FAIL() << "no error on a failing output";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.message()).find("error writing the translations of in.ids"),
              std::string::npos)
        << e.message();
  }
}

// A stop request (a Python caller's Ctrl-C) ends scoring before its next batch and a stream before
// its next window (the windows in flight leave the queue); the translator then serves the next
// call as before.
TEST(Translator, AStopRequestEndsScoringAndStreams) {
  Translator t(kModel, {.max_batch_size = 1});
  const auto src = fixture_sources();
  std::stop_source stop;
  stop.request_stop();
  EXPECT_TFM_ERROR(t.score_batch_per_token(src, src, 0, stop.get_token()), "cancelled");
  std::string lines;
  for (const auto& s : src) {
    for (size_t i = 0; i < s.size(); ++i) lines += (i ? " " : "") + std::to_string(s[i]);
    lines += "\n";
  }
  std::string many;  // long enough to be stopped in the middle
  for (int i = 0; i < 50; ++i) many += lines;
  for (int run = 0; run < 2; ++run) {
    std::istringstream in(run == 0 ? lines : many);
    std::ostringstream out;
    StreamOptions so{.ids = true, .read_ahead = 2};
    std::stop_source mid;
    std::thread stopper;
    if (run == 0) {
      so.stop = stop.get_token();
    } else {  // while it runs, from another thread
      so.stop = mid.get_token();
      stopper = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        mid.request_stop();
      });
    }
    EXPECT_TFM_ERROR(t.translate_stream(in, out, {}, so, "in.ids"), "cancelled");
    if (stopper.joinable()) stopper.join();
    if (run == 0) EXPECT_EQ(out.str(), "");
    const std::string written = out.str();
    EXPECT_LT(std::count(written.begin(), written.end(), '\n'),
              static_cast<std::ptrdiff_t>(50 * src.size()));
  }
  EXPECT_EQ(t.score_batch_per_token(src, src).size(), src.size());
  std::istringstream in(lines);
  std::ostringstream out;
  t.translate_stream(in, out, {}, {.ids = true});
  const std::string written = out.str();
  EXPECT_EQ(std::count(written.begin(), written.end(), '\n'),
            static_cast<std::ptrdiff_t>(src.size()));
}

// PAD, BOS and EOS are never a source of a model that frames its sources itself (seed004: BOS x
// EOS): they were translated as if ordinary tokens, by every front door (translate_batch,
// score_batch, --ids lines). And ids past 32 bits were cut to 32.
TEST(Translator, SpecialIdsAreNoSource) {
  Translator t(kModel);
  using IdLists = std::vector<std::vector<int64_t>>;
  EXPECT_TFM_ERROR(t.translate_batch(IdLists{{4, 5}, {3, 0}}),
                   "source 2: token id 0 is the model's PAD");
  EXPECT_TFM_ERROR(t.translate_batch(IdLists{{1, 4}}), "source 1: token id 1 is the model's BOS");
  EXPECT_TFM_ERROR(t.translate_batch(IdLists{{4, 2}}), "source 1: token id 2 is the model's EOS");
  EXPECT_TFM_ERROR(t.score_batch(IdLists{{4, 2}}, IdLists{{5}}),
                   "score_batch: source 1: token id 2 is the model's EOS");
  std::istringstream in("4 5\n3 1 6\n");
  std::ostringstream out;
  StreamOptions so;
  so.ids = true;
  EXPECT_TFM_ERROR(t.translate_stream(in, out, {}, so, "in.ids"),
                   "in.ids:2: token id 1 is the model's BOS");
  // Ids are checked in 64 bits before they are narrowed to the model's 32 (2^32 + 5 was id 5).
  const int64_t wide = (int64_t{1} << 32) + 5;
  EXPECT_TFM_ERROR(t.translate_batch(IdLists{{4, wide}}),
                   "source 1: token id 4294967301 is outside the source vocabulary");
  EXPECT_TFM_ERROR(t.translate_batch(IdLists{{4}}, IdLists{{wide}}, {}),
                   "target_prefix 1: token id 4294967301 is outside the target vocabulary");
  EXPECT_TFM_ERROR(t.score_batch(IdLists{{4}}, IdLists{{5, wide}}),
                   "score_batch: target 1: token id 4294967301 is outside the target vocabulary");
  EXPECT_TFM_ERROR(t.score_batch(IdLists{{wide}}, IdLists{{5}}),
                   "score_batch: source 1: token id 4294967301 is outside");
  EXPECT_EQ(t.translate_batch(IdLists{{4, 5, 3}}).size(), 1u);  // ordinary ids still translate
}

// Weights that are finite but far too large (3e38, as a hostile file may hold) pass the load
// check; the arithmetic overflows, and the NaN/Inf scores were printed with exit 0 beside empty
// translations. Every front door now fails naming the sentence.
TEST(Translator, NonFiniteScoresAreAnError) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tfm_huge_weights_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto model = load_model(kModel);
  for (auto& [name, p] : model->named_parameters()) p->fill_(3e38);
  save_model(*model, dir.string());
  Translator t(dir.string());
  using IdLists = std::vector<std::vector<int64_t>>;
  EXPECT_TFM_ERROR(t.translate_batch(IdLists{{4, 5}, {6}}),
                   "sentence 1: the model's score for this sentence is not finite");
  TranslationOptions unscored;  // greedy from the logits: an overflow still shows
  unscored.return_scores = false;
  EXPECT_TFM_ERROR(t.translate_batch(IdLists{{4, 5}, {6}}, unscored),
                   "sentence 1: the model's score for this sentence is not finite");
  EXPECT_TFM_ERROR(t.score_batch(IdLists{{4, 5}}, IdLists{{6}}),
                   "score_batch: pair 1: the model's score is not finite");
  std::istringstream in("4 5\n");
  std::ostringstream out;
  StreamOptions so;
  so.ids = true;
  EXPECT_TFM_ERROR(t.translate_stream(in, out, {}, so, "in.ids"), "in.ids:1: the model's score");
  EXPECT_EQ(out.str(), "");  // nothing printed
  std::filesystem::remove_all(dir);
}

TEST(Translator, ErrorsNameTheProblemInTheApisWords) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.message();
    }
    return std::string("(no error)");
  };
  Translator t(kModel);
  const auto src = fixture_sources();
  EXPECT_EQ(message([&] { t.translate_batch(src, {.beam_size = 0}); }),
            "beam_size must be at least 1 (got 0)");
  EXPECT_NE(message([&] {
              t.translate_batch(src, {.search = Search::beam, .beam_size = 2, .num_hypotheses = 3});
            }).find("num_hypotheses 3 exceeds beam_size 2"),
            std::string::npos);
  EXPECT_NE(message([&] {
              t.translate_batch(src, {.max_length_factor = 1e30});
            }).find("max_length_factor must be in [0, 1000]"),
            std::string::npos);
  EXPECT_NE(message([&] {
              t.translate_batch(std::vector<std::vector<int64_t>>{{4, 5}, {3, 99999}});
            }).find("source 2: token id 99999 is outside the source vocabulary"),
            std::string::npos);
  EXPECT_NE(message([&] {
              t.translate_batch(std::vector<std::string>{"x"});
            }).find("has no SentencePiece vocabulary"),
            std::string::npos);
  EXPECT_NE(message([&] { Translator(kModel + "/nope"); }).find("does not exist"),
            std::string::npos);
  EXPECT_NE(message([&] {
              Translator(kModel, {.inter_threads = 0});
            }).find("inter_threads must be between 1 and 1024 (got 0)"),
            std::string::npos);
  bool gpu = false;  // with a GPU, tests/cuda/test_cuda_model.cpp translates there
#ifdef TFM_WITH_CUDA
  gpu = cuda::has_device();
#endif
  if (!gpu) {
    EXPECT_NE(message([&] { Translator(kModel, {.device = Device::cuda}); }).find("device cuda"),
              std::string::npos);
  }
}

TEST(Translator, ModelInfoDescribesTheDirectory) {
  const ModelInfo info = read_model_info(kModel);
  auto model = load_model(kModel);
  const ModelConfig& c = model->config();
  EXPECT_EQ(info.d_model, c.d_model);
  EXPECT_EQ(info.heads, c.heads);
  EXPECT_EQ(info.src_vocab_size, c.src_vocab_size);
  EXPECT_EQ(info.trg_vocab_size, c.trg_vocab_size);
  EXPECT_EQ(info.max_length, c.max_length);
  EXPECT_EQ(info.source_eos, c.source_eos);
  EXPECT_EQ(info.parameter_count, model->parameter_count());
  EXPECT_EQ(info.config_json, c.to_json());
  EXPECT_TRUE(info.src_vocab_path.empty());
  Translator t(kModel, {.compute_type = ComputeType::automatic});
  EXPECT_EQ(t.model_info().parameter_count, info.parameter_count);
  EXPECT_NE(t.options().compute_type, ComputeType::automatic);  // resolved at load
  EXPECT_GE(t.options().intra_threads, 1);
}

// A cancelled call's sentences already taken into a group (all of an own request's are, at once)
// are not decoded: Ctrl-C in Python went on decoding the whole call behind the caller's back.
TEST(SearchInBatches, AbandonedBatchesAreSkipped) {
  auto model = load_model(kModel);
  std::vector<Ids> sources;
  for (const auto& s : fixture_sources())
    if (!s.empty()) sources.emplace_back(s.begin(), s.end());
  ASSERT_GE(sources.size(), 6u);
  const auto search = decode::make_search({});
  std::vector<size_t> searched;
  const auto abandoned = [](size_t i) { return i % 2 == 1; };
  runtime::search_in_batches(
      *model, *search, sources, {}, {}, {.max_sentences = 1}, nullptr,
      [&](const std::vector<size_t>& where, std::vector<decode::NBest>& r) {
        ASSERT_EQ(r.size(), 1u);
        EXPECT_FALSE(r[0].empty());
        searched.insert(searched.end(), where.begin(), where.end());
      },
      {}, abandoned);
  std::sort(searched.begin(), searched.end());
  std::vector<size_t> want;
  for (size_t i = 0; i < sources.size(); i += 2) want.push_back(i);
  EXPECT_EQ(searched, want);
}

// Sort groups (the queue's own requests, such as a stream's windows, decoded at once): every batch,
// or shard of one, holds sentences of one group only, and each group is cut exactly as when it is
// searched alone; empty sources count in the groups but are never searched. Sharded and unsharded,
// on 1 and 2 threads: the same results.
TEST(SearchInBatches, SortGroupsAreBatchedAsIfSearchedAlone) {
  auto model = load_model(kModel);
  std::vector<Ids> sources;
  for (const auto& s : fixture_sources()) sources.emplace_back(s.begin(), s.end());
  sources.insert(sources.begin() + 4, Ids{});  // an empty source inside the first group
  ASSERT_GE(sources.size(), 12u);
  const int64_t group = 5, specials = model->config().seq_format().source_specials();
  const int threads_before = get_threads();
  for (int64_t shard : {0, 2})
    for (int threads : {1, 2}) {
      SCOPED_TRACE("shard " + std::to_string(shard) + " threads " + std::to_string(threads));
      decode::SearchOptions so;
      so.beam_size = 2;
      so.shard_size = shard;
      auto search = decode::make_search(so);
      set_threads(threads);
      std::mutex mu;
      std::vector<std::vector<size_t>> seen;
      std::vector<decode::NBest> got(sources.size());
      std::vector<size_t> starts;
      for (size_t g = group; g < sources.size(); g += group) starts.push_back(g);
      runtime::search_in_batches(
          *model, *search, sources, {}, {}, {.max_sentences = 3}, nullptr,
          [&](const std::vector<size_t>& where, std::vector<decode::NBest>& r) {
            std::lock_guard<std::mutex> lock(mu);
            seen.push_back(where);
            for (size_t k = 0; k < where.size(); ++k) got[where[k]] = std::move(r[k]);
          },
          starts);
      // What each group gives searched alone: its batches (as input indices) and its results.
      std::vector<std::vector<size_t>> want;
      for (size_t g = 0; g < sources.size(); g += group) {
        const size_t end = std::min(sources.size(), g + static_cast<size_t>(group));
        const std::vector<Ids> part(sources.begin() + static_cast<int64_t>(g),
                                    sources.begin() + static_cast<int64_t>(end));
        std::vector<size_t> nonempty;
        std::vector<int64_t> lengths;
        for (size_t i = 0; i < part.size(); ++i)
          if (!part[i].empty())
            nonempty.push_back(g + i),
                lengths.push_back(static_cast<int64_t>(part[i].size()) + specials);
        // A batch's shards: equal parts of at most `shard` (decode::shard_begin).
        for (const auto& b : length_batches(lengths, {.max_sentences = 3})) {
          const auto n = static_cast<int64_t>(b.size());
          const int64_t parts = shard > 0 ? decode::shard_parts(n, shard) : 1;
          for (int64_t k = 0; k < parts; ++k) {
            std::vector<size_t> unit;
            for (int64_t j = decode::shard_begin(n, parts, k);
                 j < decode::shard_begin(n, parts, k + 1); ++j)
              unit.push_back(nonempty[b[static_cast<size_t>(j)]]);
            want.push_back(unit);
          }
        }
        const auto alone =
            runtime::search_in_batches(*model, *search, part, {}, {}, {.max_sentences = 3});
        for (size_t i = 0; i < part.size(); ++i) {
          ASSERT_EQ(got[g + i].size(), alone[i].size()) << "sentence " << g + i;
          for (size_t h = 0; h < alone[i].size(); ++h) {
            EXPECT_EQ(got[g + i][h].tokens, alone[i][h].tokens) << "sentence " << g + i;
            EXPECT_EQ(got[g + i][h].score, alone[i][h].score) << "sentence " << g + i;
          }
        }
      }
      std::sort(seen.begin(), seen.end());
      std::sort(want.begin(), want.end());
      EXPECT_EQ(seen, want);
      EXPECT_TRUE(got[4].empty());
    }
  set_threads(threads_before);
  EXPECT_THROW(runtime::search_in_batches(*model, *decode::make_search({}), sources, {}, {}, {},
                                          nullptr, {}, {5, 2}),
               Error);
}

TEST(LengthBatches, SortedCutUnderBothLimitsAndCoveringEveryItemOnce) {
  const std::vector<int64_t> lengths = {5, 1, 9, 3, 3, 7, 2, 8, 6, 4, 30};
  const auto batches = length_batches(lengths, {.max_sentences = 3, .max_tokens = 16});
  std::vector<int> seen(lengths.size(), 0);
  int64_t prev = 0;
  for (const auto& b : batches) {
    ASSERT_FALSE(b.empty());
    EXPECT_LE(b.size(), 3u);
    int64_t longest = 0;
    for (size_t i : b) {
      ++seen[i];
      EXPECT_GE(lengths[i], prev);  // ascending across and within batches
      prev = lengths[i];
      longest = std::max(longest, lengths[i]);
    }
    if (b.size() > 1) {
      EXPECT_LE(static_cast<int64_t>(b.size()) * longest, 16);
    }
  }
  for (int s : seen) EXPECT_EQ(s, 1);
  EXPECT_EQ(batches.back(), std::vector<size_t>{10});  // longer than the limit: alone
  EXPECT_THROW(length_batches(lengths, {.max_sentences = 0}), Error);
}

}  // namespace
}  // namespace tfm
