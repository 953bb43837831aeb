// Translator::generate_batch: a decoder-only model continuing prompts, against the model's full
// teacher-forced forward pass (every greedy choice is that pass's best allowed token) and
// score_batch (every hypothesis' log_prob), under other batchings and thread counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/model/checkpoint.h"
#include "tfm/ops/host.h"
#include "tfm/translator.h"

namespace tfm {
namespace {

const std::string kLm = std::string(TFM_FIXTURES_DIR) + "/decoder_only_odd";
const std::string kSeq2seq = std::string(TFM_FIXTURES_DIR) + "/convert/seed004";

// A converted GPT-2 (tools/ct2_generator_diff.py made it).
const std::string kGpt2 = std::string(TFM_FIXTURES_DIR) + "/ct2_generator/model";

// log P(· | decoder input `in`) from the full forward pass, in double.
std::vector<double> log_probs_after(const Transformer& m, const std::vector<int32_t>& in) {
  NoGradGuard no_grad;
  const auto n = static_cast<int64_t>(in.size());
  const Tensor logits = m.forward(Tensor(), Tensor::from_vector<int32_t>({1, n}, in));  // (1, n, V)
  const HostView<float> h = to_host<float>(logits.contiguous());
  const int64_t V = m.config().trg_vocab_size;
  const float* row = h.data() + (n - 1) * V;
  double mx = -std::numeric_limits<double>::infinity(), sum = 0;
  for (int64_t v = 0; v < V; ++v) mx = std::max(mx, static_cast<double>(row[v]));
  for (int64_t v = 0; v < V; ++v) sum += std::exp(row[v] - mx);
  std::vector<double> lp(static_cast<size_t>(V));
  for (int64_t v = 0; v < V; ++v) lp[static_cast<size_t>(v)] = row[v] - mx - std::log(sum);
  return lp;
}

// log P(· | BOS, prefix).
std::vector<double> next_log_probs(const Transformer& m, const std::vector<int64_t>& prefix) {
  std::vector<int32_t> in = {static_cast<int32_t>(m.config().bos_id)};
  for (int64_t t : prefix) in.push_back(static_cast<int32_t>(t));
  return log_probs_after(m, in);
}

using Prompts = std::vector<std::vector<int64_t>>;

const Prompts kPrompts = {
    {}, {5}, {3, 4, 5, 6}, {7, 8}, {9, 10, 11}, {12}, {13, 14, 15, 16, 17}, {18, 3}, {6, 6, 6}};

TEST(Generate, GreedyTakesTheFullForwardsBestTokenEveryStep) {
  Translator t(kLm, {.max_batch_size = 4});
  const auto model = load_model(kLm);
  const ModelConfig& c = model->config();
  TranslationOptions o;
  o.max_decoding_length = 12;
  o.min_decoding_length = 2;
  const auto got = t.generate_batch(kPrompts, o);
  ASSERT_EQ(got.size(), kPrompts.size());
  int steps = 0, ended = 0;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    ASSERT_EQ(got[i].hypotheses.size(), 1u) << "prompt " << i;
    const TranslationHypothesis& h = got[i].hypotheses[0];
    ASSERT_GE(h.ids.size(), kPrompts[i].size());
    ASSERT_TRUE(std::equal(kPrompts[i].begin(), kPrompts[i].end(), h.ids.begin()));
    ASSERT_LE(static_cast<int64_t>(h.ids.size()) + 1, o.max_decoding_length);
    double log_prob = 0;
    for (size_t k = 0; k <= h.ids.size(); ++k) {
      const std::vector<int64_t> prefix(h.ids.begin(), h.ids.begin() + static_cast<int64_t>(k));
      const auto lp = next_log_probs(*model, prefix);
      // The token taken at this position: the hypothesis' next one, or EOS after the last.
      const int64_t taken = k < h.ids.size() ? h.ids[k] : c.eos_id;
      log_prob += lp[static_cast<size_t>(taken)];
      if (k < kPrompts[i].size()) continue;  // forced by the prompt
      const bool last = static_cast<int64_t>(k) + 1 == o.max_decoding_length;
      double best = -std::numeric_limits<double>::infinity();
      for (int64_t v = 0; v < c.trg_vocab_size; ++v) {
        const bool allowed =
            last ? v == c.eos_id
                 : v != c.pad_id && v != c.bos_id &&
                       (v != c.eos_id || static_cast<int64_t>(k) >= o.min_decoding_length);
        if (allowed) best = std::max(best, lp[static_cast<size_t>(v)]);
      }
      // The incremental steps sum in another order than the full pass: a near-tie may fall
      // either way, nothing more.
      EXPECT_GE(lp[static_cast<size_t>(taken)], best - 1e-4) << "prompt " << i << " step " << k;
      ++steps;
      ended += taken == c.eos_id && !last;
    }
    EXPECT_NEAR(h.log_prob, log_prob, 1e-4 * (1 + std::abs(log_prob))) << "prompt " << i;
  }
  EXPECT_GE(steps, 40);
  EXPECT_GE(ended, 1) << "no continuation chose EOS before the cap: the test sees too little";
}

// A converted GPT-2 reads its prompt as given: one that starts with BOS (CTranslate2's start
// tokens) reads BOS first and leaves it out of the output; one without starts the decoder
// itself. With renormalize_min_length, EOS leaves the softmax while min_length forbids it.
// Against the full forward pass over exactly those decoder inputs.
TEST(Generate, ConvertedModelReadsALeadingBosAndRenormalisesMinLength) {
  Translator t(kGpt2);
  const auto model = load_model(kGpt2);
  const ModelConfig& c = model->config();
  TranslationOptions o = t.default_options();
  o.search = Search::greedy;
  o.beam_size = o.num_hypotheses = 1;
  o.max_decoding_length = 9;
  o.max_new_tokens = 0;
  o.min_decoding_length = 6;
  o.renormalize_min_length = true;
  const Prompts prompts = {{c.bos_id, 5, 9}, {c.bos_id}, {5, 9}, {c.bos_id, 7}};
  const auto got = t.generate_batch(prompts, o);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Prompts::value_type& p = prompts[i];
    const bool bos = p.front() == c.bos_id;
    const TranslationHypothesis& h = got[i].hypotheses.at(0);
    const auto shown = static_cast<ptrdiff_t>(p.size()) - (bos ? 1 : 0);
    ASSERT_GE(static_cast<ptrdiff_t>(h.ids.size()), shown) << "prompt " << i;
    ASSERT_TRUE(std::equal(p.begin() + (bos ? 1 : 0), p.end(), h.ids.begin())) << "prompt " << i;
    std::vector<int32_t> in(p.begin(), p.end());  // the decoder's input, BOS included if given
    double log_prob = 0;
    const auto total = static_cast<int64_t>(p.size() + h.ids.size()) - shown;
    for (int64_t k = static_cast<int64_t>(p.size()); k <= total && k < o.max_decoding_length; ++k) {
      const auto lp = log_probs_after(*model, in);
      const bool no_eos = k < o.min_decoding_length;
      const double renorm = no_eos ? std::log1p(-std::exp(lp[static_cast<size_t>(c.eos_id)])) : 0;
      // The token at position k: the output's (after the BOS read), or EOS once it ended.
      const int64_t next = k < total ? h.ids[static_cast<size_t>(k - (bos ? 1 : 0))] : c.eos_id;
      double best = -std::numeric_limits<double>::infinity();
      for (int64_t v = 0; v < c.trg_vocab_size; ++v)
        if (v != c.eos_id || !no_eos) best = std::max(best, lp[static_cast<size_t>(v)]);
      EXPECT_GE(lp[static_cast<size_t>(next)], best - 1e-4) << "prompt " << i << " step " << k;
      log_prob += lp[static_cast<size_t>(next)] - renorm;
      in.push_back(static_cast<int32_t>(next));
    }
    EXPECT_NEAR(h.log_prob, log_prob, 1e-4 * (1 + std::abs(log_prob))) << "prompt " << i;
    EXPECT_LE(total, o.max_decoding_length) << "prompt " << i;
    EXPECT_GE(total, o.min_decoding_length) << "prompt " << i;
  }
}

// score_sequences reads each sequence as given (its first token first, BOS or not): each later
// token's log-probability is the full forward pass's over the tokens before it.
TEST(Generate, ScoreSequencesReadTheFirstTokenFirst) {
  Translator t(kGpt2, {.max_batch_size = 2});
  const auto model = load_model(kGpt2);
  const int64_t bos = model->config().bos_id;
  const Prompts seqs = {{5, 9, 7, 3}, {bos, 5, 9}, {9}, {}, {7, 7, bos}, {9, 5}};
  const auto got = t.score_sequences(seqs);
  ASSERT_EQ(got.size(), seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    ASSERT_EQ(got[i].log_probs.size(), seqs[i].empty() ? 0 : seqs[i].size() - 1)
        << "sequence " << i;
    EXPECT_TRUE(seqs[i].empty() || std::equal(seqs[i].begin() + 1, seqs[i].end(),
                                              got[i].tokens.begin(), got[i].tokens.end()));
    for (size_t k = 1; k < seqs[i].size(); ++k) {
      const std::vector<int32_t> in(seqs[i].begin(), seqs[i].begin() + static_cast<ptrdiff_t>(k));
      const auto lp = log_probs_after(*model, in);
      EXPECT_NEAR(got[i].log_probs[k - 1], lp[static_cast<size_t>(seqs[i][k])], 1e-4)
          << "sequence " << i << " token " << k;
    }
  }
  // Cut to 2 tokens first, an end token that ended a sequence kept last (CTranslate2's cut).
  const auto cut = t.score_sequences(seqs, 2);
  EXPECT_EQ(cut[0].tokens, (std::vector<int64_t>{9}));
  EXPECT_NEAR(cut[0].log_probs.at(0), got[0].log_probs[0], 1e-6);
  EXPECT_EQ(cut[4].tokens, (std::vector<int64_t>{bos}));
  EXPECT_NEAR(cut[4].log_probs.at(0), log_probs_after(*model, {7})[static_cast<size_t>(bos)], 1e-4);
}

TEST(Generate, BeamAndSamplingAreScoredAsScoreBatchWhateverTheBatching) {
  Translator t(kLm, {.max_batch_size = 4});
  Translator other(kLm, {.intra_threads = 2, .inter_threads = 2, .max_batch_size = 1});
  TranslationOptions beam, sampling;
  beam.search = Search::beam;
  beam.beam_size = 3;
  beam.num_hypotheses = 2;
  beam.max_decoding_length = 10;
  sampling.search = Search::sampling;
  sampling.seed = 7;
  sampling.max_decoding_length = 10;
  for (const TranslationOptions& o : {beam, sampling}) {
    const auto got = t.generate_batch(kPrompts, o);
    const auto again = other.generate_batch(kPrompts, o);
    std::vector<std::vector<int64_t>> hyps;
    std::vector<double> log_probs;
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      ASSERT_EQ(got[i].hypotheses.size(), static_cast<size_t>(o.num_hypotheses));
      ASSERT_EQ(again[i].hypotheses.size(), got[i].hypotheses.size());
      for (size_t k = 0; k < got[i].hypotheses.size(); ++k) {
        const TranslationHypothesis& h = got[i].hypotheses[k];
        EXPECT_TRUE(std::equal(kPrompts[i].begin(), kPrompts[i].end(), h.ids.begin()));
        EXPECT_EQ(h.ids, again[i].hypotheses[k].ids) << "prompt " << i;
        hyps.push_back(h.ids);
        log_probs.push_back(h.log_prob);
      }
    }
    const std::vector<double> want = t.score_batch(Prompts{}, hyps);
    ASSERT_EQ(want.size(), log_probs.size());
    for (size_t j = 0; j < want.size(); ++j)
      EXPECT_NEAR(log_probs[j], want[j], 1e-4 * (1 + std::abs(want[j]))) << "hypothesis " << j;
  }
}

std::string id_line(const std::vector<int64_t>& ids) {
  std::string s;
  for (size_t k = 0; k < ids.size(); ++k) s += (k ? " " : "") + std::to_string(ids[k]);
  return s;
}

// generate_stream (what tfm generate runs) gives generate_batch's continuations, one line each in
// input order, in windows of any size; n-best lines carry generate_batch's scores.
TEST(Generate, StreamGivesGenerateBatchsLines) {
  Translator t(kLm, {.inter_threads = 2, .max_batch_size = 2});
  std::string input;
  for (const auto& p : kPrompts) input += id_line(p) + "\n";
  TranslationOptions beam;
  beam.search = Search::beam;
  beam.beam_size = 3;
  beam.num_hypotheses = 2;
  beam.max_decoding_length = 10;
  TranslationOptions greedy;
  greedy.max_decoding_length = 9;
  for (const TranslationOptions& o : {greedy, beam}) {
    const auto want = t.generate_batch(kPrompts, o);
    std::string lines, n_best;
    for (size_t i = 0; i < want.size(); ++i) {
      lines += id_line(want[i].hypotheses.at(0).ids) + "\n";
      for (const auto& h : want[i].hypotheses) {
        char score[32];
        std::snprintf(score, sizeof score, "%.6f", h.score);
        n_best += std::to_string(i) + " ||| " + id_line(h.ids) + " ||| " + score + "\n";
      }
    }
    for (int64_t read_ahead : {100, 3, 1}) {
      std::istringstream in(input), in2(input);
      std::ostringstream out, out2;
      t.generate_stream(in, out, o, {.ids = true, .read_ahead = read_ahead});
      EXPECT_EQ(out.str(), lines) << "beam " << o.beam_size << " read_ahead " << read_ahead;
      t.generate_stream(in2, out2, o, {.ids = true, .n_best = true, .read_ahead = read_ahead});
      EXPECT_EQ(out2.str(), n_best) << "beam " << o.beam_size << " read_ahead " << read_ahead;
    }
  }
  // The continuations are not the prompts alone: the comparison above sees generated tokens.
  size_t longer = 0;
  const auto got = t.generate_batch(kPrompts, greedy);
  for (size_t i = 0; i < kPrompts.size(); ++i)
    longer += got[i].hypotheses.at(0).ids.size() > kPrompts[i].size();
  EXPECT_GE(longer, kPrompts.size() - 2);

  auto error = [&](const std::string& text, StreamOptions so, const Translator& tr) {
    std::istringstream in(text);
    std::ostringstream out;
    so.ids = true;
    return testing::error_of([&] { tr.generate_stream(in, out, greedy, so, "in.ids"); });
  };
  auto has = [](const std::string& what, const std::string& part) {
    return what.find(part) != std::string::npos;
  };
  EXPECT_TRUE(has(error("3\n4 2\n", {}, t), "in.ids:2: token id 2 is the model's EOS"));
  EXPECT_TRUE(has(error("3\nx\n", {}, t), "in.ids:2"));
  std::istringstream pre("3\n");
  EXPECT_TRUE(has(error("3\n", {.target_prefix = &pre}, t), "the input lines are the prompts"));
  Translator seq2seq(kSeq2seq);
  EXPECT_TRUE(has(error("3\n", {}, seq2seq), "is an encoder-decoder model"));
  std::istringstream in("3\n");
  std::ostringstream out;
  EXPECT_TFM_ERROR(t.translate_stream(in, out, {}, {.ids = true}), "continues prompts");
}

TEST(Generate, ErrorsNameTheProblem) {
  Translator lm(kLm), seq2seq(kSeq2seq);
  EXPECT_TFM_ERROR(seq2seq.generate_batch(kPrompts), "is an encoder-decoder model");
  EXPECT_TFM_ERROR(lm.translate_batch(kPrompts), "continues prompts (generate_batch)");
  EXPECT_TFM_ERROR(lm.generate_batch(kPrompts, {.return_attention = true}), "no cross-attention");
  EXPECT_TFM_ERROR(lm.generate_batch(Prompts{{3}, {4, 2}}),
                   "prompt 2: token id 2 is the model's EOS");
  EXPECT_TFM_ERROR(lm.generate_batch(Prompts{{3}, {4, 99}}), "prompt 2: token id 99 is outside");
  EXPECT_TFM_ERROR(lm.generate_batch(Prompts{std::vector<int64_t>(32, 3)}),
                   "the model's 32 positions leave room for 31 before EOS");
  EXPECT_TFM_ERROR(lm.generate_batch(Prompts{{3, 4, 5}}, {.max_decoding_length = 3}),
                   "max_decoding_length 3 leaves room for 2");
  // The longest prompt that fits: EOS follows it at once.
  const auto r = lm.generate_batch(Prompts{{3, 4}}, {.max_decoding_length = 3});
  EXPECT_EQ(r.at(0).hypotheses.at(0).ids, (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(lm.generate_batch(Prompts{}).empty());
  // The asynchronous call makes the same checks before queueing anything (a server's 400s).
  EXPECT_TFM_ERROR(lm.generate_async(Prompts{{3}, {4, 2}}, {}, Batching::shared),
                   "prompt 2: token id 2 is the model's EOS");
  EXPECT_TFM_ERROR(lm.generate_async(Prompts{{3, 4, 5}}, {.max_decoding_length = 3}),
                   "max_decoding_length 3 leaves room for 2");
  EXPECT_THROW(lm.generate_async(kPrompts, {.beam_size = 0}), InvalidArgument);
  EXPECT_TFM_ERROR(seq2seq.generate_async(kPrompts, {}), "is an encoder-decoder model");
  EXPECT_EQ(lm.queue_stats().admitted_requests, 0u);
}

}  // namespace
}  // namespace tfm
