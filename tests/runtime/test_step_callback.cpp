// TranslationOptions::step_callback (CTranslate2's callback): the tokens and log-probabilities it
// sees are, in order, those of the hypotheses the search returns, with each sentence's index in
// the call whatever the sorting, batches, shards and threads; returning true ends that sentence
// only; the validator refuses the searches that cannot report steps; an exception ends the call.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tfm/translator.h"

namespace tfm {
namespace {

using IdLists = std::vector<std::vector<int64_t>>;

const std::string kModel = std::string(TFM_FIXTURES_DIR) + "/convert/seed004";
const std::string kLm = std::string(TFM_FIXTURES_DIR) + "/decoder_only_odd";
const std::string kGpt2 = std::string(TFM_FIXTURES_DIR) + "/ct2_generator/model";

IdLists sources(size_t copies = 1) {
  std::ifstream in(kModel + "/src.ids");
  IdLists one;
  for (std::string line; std::getline(in, line);) {
    std::istringstream s(line);
    std::vector<int64_t> ids;
    for (int64_t v; s >> v;) ids.push_back(v);
    one.push_back(ids);
  }
  IdLists out;
  // Each copy cut differently, so the lengths (and the sorted order) differ from the input's.
  for (size_t c = 0; c < copies; ++c)
    for (size_t i = 0; i < one.size(); ++i) {
      auto ids = one[(i + c) % one.size()];
      if (c % 2 == 1 && ids.size() > 2) ids.resize(ids.size() - 1 - i % 2);
      out.push_back(ids);
    }
  return out;
}

// What the callback saw of one sentence.
struct Seen {
  std::vector<int64_t> tokens;
  std::vector<double> log_probs;
  std::vector<int64_t> steps;
  std::vector<bool> last, prefix;
};

// A callback that records every step per index (and checks they come one at a time); `stop`
// says which steps end their sentence.
struct Recorder {
  std::map<size_t, Seen> seen;
  std::mutex mu;
  int inside = 0;
  bool overlapped = false;
  std::function<bool(const StepResult&)> stop = [](const StepResult&) { return false; };

  StepCallback callback() {
    return [this](const StepResult& s) {
      {
        std::lock_guard<std::mutex> lock(mu);
        overlapped = overlapped || inside > 0;
        ++inside;
        Seen& x = seen[s.index];
        x.tokens.push_back(s.token_id);
        x.log_probs.push_back(s.log_prob);
        x.steps.push_back(s.step);
        x.last.push_back(s.is_last);
        x.prefix.push_back(s.in_prefix);
      }
      std::this_thread::yield();  // room for another thread to overlap, were calls not serialised
      const bool out = stop(s);
      std::lock_guard<std::mutex> lock(mu);
      --inside;
      return out;
    };
  }
};

// Each sentence's reported steps are its best hypothesis: its ids (with the end token when it
// ended on one), their log-probabilities summing to log_prob, steps 0, 1, ..., is_last on the
// last alone.
void expect_steps_are_hypotheses(const std::vector<TranslationResult>& results, const Recorder& r,
                                 const std::string& what) {
  size_t searched = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].hypotheses.empty()) {
      EXPECT_EQ(r.seen.count(i), 0u) << what << ": sentence " << i << " was not searched";
      continue;
    }
    ++searched;
    ASSERT_EQ(r.seen.count(i), 1u) << what << ": sentence " << i;
    const Seen& s = r.seen.at(i);
    const TranslationHypothesis& h = results[i].hypotheses[0];
    EXPECT_EQ(s.tokens, h.ids) << what << ": sentence " << i;
    double sum = 0.0;
    for (size_t k = 0; k < s.tokens.size(); ++k) {
      sum += s.log_probs[k];
      EXPECT_EQ(s.steps[k], static_cast<int64_t>(k)) << what << ": sentence " << i;
      EXPECT_EQ(s.last[k], k + 1 == s.tokens.size()) << what << ": sentence " << i << " step " << k;
    }
    EXPECT_NEAR(sum, h.log_prob, 1e-4) << what << ": sentence " << i;
  }
  EXPECT_EQ(r.seen.size(), searched) << what;
  EXPECT_FALSE(r.overlapped) << what << ": the callback ran on two threads at once";
}

TEST(StepCallback, SeesGreedysTokensWithTheCallersIndices) {
  IdLists src = sources(4);
  src.insert(src.begin() + 2, std::vector<int64_t>{});  // an empty source: no search, no steps
  // Sorted batches of 4 on two workers; one batch of all 20 sentences, in shards of 16 and 4
  // (SearchOptions::shard_size) on 2 threads.
  for (const TranslatorOptions& to :
       {TranslatorOptions{.intra_threads = 1, .inter_threads = 2, .max_batch_size = 4},
        TranslatorOptions{.intra_threads = 2, .max_batch_size = 64}}) {
    Translator t(kModel, to);
    TranslationOptions o{.return_end_token = true};
    const auto want = t.translate_batch(src, o);
    Recorder r;
    o.step_callback = r.callback();
    const auto got = t.translate_batch(src, o);
    const std::string what = "max_batch_size " + std::to_string(to.max_batch_size);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].hypotheses.size(), want[i].hypotheses.size());
      if (got[i].hypotheses.empty()) continue;
      EXPECT_EQ(got[i].hypotheses[0].ids, want[i].hypotheses[0].ids) << what;
      EXPECT_EQ(got[i].hypotheses[0].log_prob, want[i].hypotheses[0].log_prob) << what;
    }
    expect_steps_are_hypotheses(got, r, what);
  }
}

TEST(StepCallback, ReportsPrefixTokensAndCtranslate2sLastStep) {
  Translator t(kModel, {.max_batch_size = 3});
  const IdLists src = sources();
  IdLists prefixes(src.size());
  const auto free = t.translate_batch(src, {});
  for (size_t i = 0; i < src.size(); i += 2)
    prefixes[i].assign(
        free[i].hypotheses[0].ids.begin(),
        free[i].hypotheses[0].ids.begin() + std::min<size_t>(2, free[i].hypotheses[0].ids.size()));
  Recorder r;
  // CTranslate2's cut at the max length (no end token) on a short cap: is_last on the cut token.
  TranslationOptions o{
      .max_decoding_length = 6, .return_end_token = true, .force_end_token = false};
  const auto want = t.translate_batch(src, prefixes, o);
  o.step_callback = r.callback();
  const auto got = t.translate_batch(src, prefixes, o);
  expect_steps_are_hypotheses(got, r, "prefixes");
  for (size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(got[i].hypotheses[0].ids, want[i].hypotheses[0].ids);
    const Seen& s = r.seen.at(i);
    for (size_t k = 0; k < s.prefix.size(); ++k)
      EXPECT_EQ(s.prefix[k], k < prefixes[i].size()) << "sentence " << i << " step " << k;
  }
}

TEST(StepCallback, TrueEndsThatSentenceOnly) {
  Translator t(kModel, {.inter_threads = 2, .max_batch_size = 3});
  const IdLists src = sources(2);
  const TranslationOptions plain{.return_end_token = true};
  const auto want = t.translate_batch(src, plain);
  Recorder r;
  r.stop = [](const StepResult& s) { return s.index % 3 == 1 && s.step == 1; };
  TranslationOptions o = plain;
  o.step_callback = r.callback();
  const auto got = t.translate_batch(src, o);
  for (size_t i = 0; i < src.size(); ++i) {
    const auto& w = want[i].hypotheses[0];
    const auto& g = got[i].hypotheses[0];
    const Seen& s = r.seen.at(i);
    if (i % 3 != 1 || w.ids.size() <= 2) {  // not stopped (or ended by then anyway)
      EXPECT_EQ(g.ids, w.ids) << "sentence " << i;
      EXPECT_EQ(g.log_prob, w.log_prob) << "sentence " << i;
      continue;
    }
    // Its first two tokens, without an end token; log_prob theirs.
    EXPECT_EQ(g.ids, std::vector<int64_t>(w.ids.begin(), w.ids.begin() + 2)) << "sentence " << i;
    EXPECT_EQ(s.tokens, g.ids) << "sentence " << i;
    EXPECT_NEAR(g.log_prob, s.log_probs[0] + s.log_probs[1], 1e-5) << "sentence " << i;
  }
}

TEST(StepCallback, SamplingAndGenerationReportTheirTokens) {
  Translator t(kModel, {.max_batch_size = 4});
  const IdLists src = sources(2);
  Recorder r;
  TranslationOptions o{
      .search = Search::sampling, .return_end_token = true, .sampling_temperature = 0.8, .seed = 5};
  const auto want = t.translate_batch(src, o);
  o.step_callback = r.callback();
  const auto got = t.translate_batch(src, o);
  for (size_t i = 0; i < src.size(); ++i)
    EXPECT_EQ(got[i].hypotheses[0].ids, want[i].hypotheses[0].ids) << "sentence " << i;
  expect_steps_are_hypotheses(got, r, "sampling");

  // A decoder-only model: the prompt's tokens come first, marked as the prefix.
  Translator lm(kLm, {.max_batch_size = 2});
  const IdLists prompts = {{5, 6}, {}, {7, 8, 9}, {4}};
  Recorder g;
  TranslationOptions go{.max_decoding_length = 12, .return_end_token = true};
  go.step_callback = g.callback();
  const auto gen = lm.generate_batch(prompts, go);
  expect_steps_are_hypotheses(gen, g, "generate");
  for (size_t i = 0; i < prompts.size(); ++i)
    for (size_t k = 0; k < g.seen.at(i).prefix.size(); ++k)
      EXPECT_EQ(g.seen.at(i).prefix[k], k < prompts[i].size());
}

// A stream's windows share the call's callback: each line's steps, keyed by its line, are its
// output line's ids (then EOS).
TEST(StepCallback, StreamsReportEachLineByItsIndex) {
  Translator t(kModel, {.inter_threads = 2, .max_batch_size = 2});
  const IdLists src = sources(3);
  std::ostringstream in_text;
  for (const auto& ids : src) {
    for (size_t k = 0; k < ids.size(); ++k) in_text << (k ? " " : "") << ids[k];
    in_text << "\n";
  }
  std::istringstream in(in_text.str());
  std::ostringstream out;
  Recorder r;
  TranslationOptions o;
  o.step_callback = r.callback();
  t.translate_stream(in, out, o, {.ids = true, .read_ahead = 4});
  std::istringstream lines(out.str());
  size_t i = 0;
  for (std::string line; std::getline(lines, line); ++i) {
    std::istringstream ids(line);
    std::vector<int64_t> want;
    for (int64_t v; ids >> v;) want.push_back(v);
    want.push_back(t.model_info().eos_id);
    ASSERT_EQ(r.seen.count(i), 1u) << "line " << i;
    EXPECT_EQ(r.seen.at(i).tokens, want) << "line " << i;
  }
  EXPECT_EQ(i, src.size());
  EXPECT_EQ(r.seen.size(), src.size());
  EXPECT_FALSE(r.overlapped);
}

TEST(StepCallback, ValidatorRefusesSearchesWithoutSteps) {
  Translator t(kModel);
  const IdLists src = sources();
  bool called = false;
  TranslationOptions o{.search = Search::beam, .beam_size = 4};
  o.step_callback = [&](const StepResult&) { return called = true; };
  EXPECT_THROW(t.translate_batch(src, o), InvalidArgument);
  EXPECT_THROW(validate_translation_options(o, t.model_info()), InvalidArgument);
  o.beam_size = 1;
  o.search = Search::greedy;
  o.return_alternatives = true;
  o.num_hypotheses = 2;
  EXPECT_THROW(t.translate_batch(src, o), InvalidArgument);
  EXPECT_FALSE(called);
}

// A converted model decoded by generate()'s rules reads its prompt unscored: the callback sees
// the generated tokens, numbered after the prompt's part of the output.
TEST(StepCallback, GenerateRulesReportTheGeneratedTokens) {
  Translator g(kGpt2, {.max_batch_size = 2});
  TranslationOptions o = g.default_options();
  o.search = Search::greedy, o.beam_size = 1, o.num_hypotheses = 1;
  o.max_decoding_length = 9, o.max_new_tokens = 0, o.return_end_token = true;
  const IdLists prompts = {{36, 0, 1}, {23, 24}, {36}, {7, 4, 11, 11, 14}};  // 36: BOS
  const auto want = g.generate_batch(prompts, o);
  Recorder r;
  o.step_callback = r.callback();
  const auto got = g.generate_batch(prompts, o);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& h = got[i].hypotheses[0];
    EXPECT_EQ(h.ids, want[i].hypotheses[0].ids);
    const size_t shown = prompts[i].size() - (prompts[i][0] == 36 ? 1 : 0);
    const Seen& s = r.seen.at(i);
    EXPECT_EQ(s.tokens,
              std::vector<int64_t>(h.ids.begin() + static_cast<int64_t>(shown), h.ids.end()))
        << "prompt " << i;
    double sum = 0.0;
    for (size_t k = 0; k < s.tokens.size(); ++k) {
      sum += s.log_probs[k];
      EXPECT_EQ(s.steps[k], static_cast<int64_t>(shown + k));
      EXPECT_FALSE(s.prefix[k]);
      EXPECT_EQ(s.last[k], k + 1 == s.tokens.size());
    }
    EXPECT_NEAR(sum, h.log_prob, 1e-4) << "prompt " << i;
  }
}

TEST(StepCallback, AnExceptionEndsTheCallAndReachesTheCaller) {
  Translator t(kModel, {.intra_threads = 2, .inter_threads = 2, .max_batch_size = 2});
  const IdLists src = sources(4);
  int after = 0;
  bool thrown = false;
  TranslationOptions o;
  o.step_callback = [&](const StepResult& s) {
    if (thrown) ++after;  // serialised: no lock needed
    if (s.index == 3 && s.step == 1) {
      thrown = true;
      throw std::runtime_error("stop here");
    }
    return false;
  };
  try {
    t.translate_batch(src, o);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "stop here");
  }
  EXPECT_EQ(after, 0) << "the callback was called after it threw";
  // The translator is fine afterwards.
  o.step_callback = {};
  EXPECT_EQ(t.translate_batch(src, o).size(), src.size());
}

}  // namespace
}  // namespace tfm
