#include "tfm/decode/search.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "tfm/core/device_copy.h"
#include "tfm/core/parallel.h"
#include "tfm/core/profile.h"
#include "tfm/decode/detail.h"
#include "tfm/ops/host.h"
#include "tfm/ops/softmax.h"

namespace tfm::decode {

double final_score(double log_prob, int64_t len, const SearchOptions& o) {
  if (o.normalize) return log_prob / static_cast<double>(std::max<int64_t>(len, 1));
  if (o.length_penalty == 0.0) return log_prob;
  if (o.power_penalty) return log_prob / std::pow(static_cast<double>(len), o.length_penalty);
  return log_prob / std::pow((5.0 + static_cast<double>(len)) / 6.0, o.length_penalty);
}

int64_t max_target_length(const ModelConfig& c, const SearchOptions& o, int64_t src_len,
                          int64_t prefix_len) {
  const int64_t by_new = o.max_new_tokens > 0 ? prefix_len + o.max_new_tokens : INT64_MAX;
  // A decoder-only model continues its prompt up to the caps: there is no source to scale by.
  if (!c.has_encoder())
    return std::max<int64_t>(std::min({o.max_length, c.max_length, by_new}), prefix_len + 1);
  const double by_source = o.max_length_a * static_cast<double>(src_len) + o.max_length_b;
  // Capped in double first: a huge factor would overflow the conversion (undefined behaviour).
  const double cap = static_cast<double>(std::min(o.max_length, c.max_length));
  int64_t n = by_source >= cap ? static_cast<int64_t>(cap)
              : by_source >= 1 ? static_cast<int64_t>(std::floor(by_source))
                               : 1;                       // also NaN
  n = std::min({n, o.max_length, c.max_length, by_new});  // the decoder reads positions 0 … n-1
  return std::max<int64_t>(n, prefix_len + 1);
}

namespace {

// Runs an inner search on consecutive shards of the sentences, the shards in parallel.
class ShardedSearch : public Search {
 public:
  ShardedSearch(std::unique_ptr<Search> inner, const SearchOptions& o)
      : inner_(std::move(inner)), o_(o) {}

  int64_t shard_size(int64_t sentences) const override { return shard_sentences(o_, sentences); }
  const Search* shard_search() const override { return inner_.get(); }

  std::vector<NBest> run(const Transformer& model, const std::vector<Ids>& sources,
                         const std::vector<uint64_t>& ids,
                         const std::vector<Ids>& prefixes) const override {
    const int64_t n = static_cast<int64_t>(sources.size());
    const int64_t shards = shard_parts(n, shard_sentences(o_, n));
    if (shards <= 1) return inner_->run(model, sources, ids, prefixes);
    TFM_CHECK(ids.empty() || ids.size() == sources.size())
        << "search: " << ids.size() << " ids for " << sources.size() << " sources";
    // Errors name the sentence's index in the whole batch.
    detail::check_inputs(model, sources, o_, prefixes);
    std::vector<std::vector<NBest>> results(shards);
    parallel_items(shards, get_threads(), [&](int64_t k) {
      const int64_t b = shard_begin(n, shards, k), e = shard_begin(n, shards, k + 1);
      std::vector<Ids> src(sources.begin() + b, sources.begin() + e), pre;
      if (!prefixes.empty()) pre.assign(prefixes.begin() + b, prefixes.begin() + e);
      std::vector<uint64_t> shard_ids;
      for (int64_t i = b; i < e; ++i)
        shard_ids.push_back(ids.empty() ? static_cast<uint64_t>(i) : ids[i]);
      results[k] = inner_->run(model, src, shard_ids, pre);
    });
    std::vector<NBest> out;
    out.reserve(sources.size());
    for (auto& r : results)
      for (NBest& nb : r) out.push_back(std::move(nb));
    return out;
  }

 private:
  std::unique_ptr<Search> inner_;
  SearchOptions o_;
};

}  // namespace

int64_t shard_sentences(const SearchOptions& o, int64_t sentences) {
  if (o.shard_size != SearchOptions::kAutoShard) return o.shard_size;
  const int64_t rows = std::max<int64_t>(1, o.beam_size);
  const int64_t most = std::max<int64_t>(1, kShardRows / rows);
  const int64_t least = std::max<int64_t>(1, kShardMinRows / rows);
  const int64_t spread = (std::max<int64_t>(sentences, 1) + kShardSpread - 1) / kShardSpread;
  return std::clamp(spread, least, most);
}

bool unscored_greedy(const SearchOptions& o) {
  // Where the first end token a step ranks best ends the sentence, whatever the score: generate()'s
  // greedy search always; by the tfm rule (can_stop), CTranslate2's, which stops at one finished
  // hypothesis and finishes only its best candidate, and tfm's without a length penalty, once no
  // live hypothesis (whose log-prob only falls) beats it.
  const bool first_end_stops =
      o.rule == SearchRule::transformers ||
      (o.patience > 0.0 ? std::round(o.patience) == 1.0
                        : o.early_stop && o.length_penalty == 0.0 && !o.normalize);
  return !o.scores && o.beam_size == 1 && !o.sampling && !o.alternatives && o.prefix_bias == 0.0 &&
         !o.on_step && first_end_stops;
}

std::unique_ptr<Search> make_search(const SearchOptions& o) {
  TFM_CHECK(o.shard_size >= 0 || o.shard_size == SearchOptions::kAutoShard)
      << "search: shard size must be >= 0 (or kAutoShard), got " << o.shard_size;
  std::unique_ptr<Search> s;
  if (o.alternatives)
    s = make_alternatives(o);
  else if (o.rule == SearchRule::transformers)
    s = make_transformers_search(o);
  else if (o.sampling)
    s = make_sampling(o);
  else if (o.beam_size == 1)
    s = make_greedy(o);
  else
    s = make_beam(o);
  if (o.shard_size == 0) return s;
  return std::make_unique<ShardedSearch>(std::move(s), o);
}

namespace detail {

void check_inputs(const Transformer& model, const std::vector<Ids>& sources, const SearchOptions& o,
                  const std::vector<Ids>& prefixes) {
  const ModelConfig& c = model.config();
  if (!c.has_encoder()) {
    for (size_t i = 0; i < sources.size(); ++i)
      TFM_CHECK(sources[i].empty())
          << "search: source " << i << " is not empty, and the model is decoder-only: it "
          << "continues prompts, given as the target prefixes";
    TFM_CHECK(!o.return_attention)
        << "search: a decoder-only model has no cross-attention to return";
  }
  TFM_CHECK(o.beam_size >= 1) << "search: beam size must be >= 1, got " << o.beam_size;
  TFM_CHECK(o.n_best >= 1 && (o.n_best <= o.beam_size || o.alternatives))
      << "search: n_best must be in [1, beam size " << o.beam_size << "], got " << o.n_best;
  TFM_CHECK(!o.sampling || o.beam_size == 1) << "search: sampling needs beam size 1";
  TFM_CHECK(o.top_p > 0.0 && o.top_p <= 1.0) << "search: top-p must be in (0, 1], got " << o.top_p;
  TFM_CHECK(o.top_k >= 0) << "search: top-k must be >= 0, got " << o.top_k;
  TFM_CHECK(o.max_new_tokens >= 0)
      << "search: max_new_tokens must be >= 0, got " << o.max_new_tokens;
  TFM_CHECK(o.rule == SearchRule::tfm || !o.sampling)
      << "search: the transformers rule decodes greedily or by beam search, not by sampling";
  TFM_CHECK(o.repetition_penalty > 0.0)
      << "search: the repetition penalty must be > 0, got " << o.repetition_penalty;
  TFM_CHECK(o.no_repeat_ngram_size >= 0)
      << "search: no_repeat_ngram_size must be >= 0, got " << o.no_repeat_ngram_size;
  TFM_CHECK(o.rule == SearchRule::tfm ||
            (o.repetition_penalty == 1.0 && !o.alternatives &&
             (o.end_ids.empty() || o.end_ids == Ids{static_cast<int32_t>(c.eos_id)})))
      << "search: the transformers rule has no repetition penalty, end tokens besides EOS or "
      << "alternatives";
  TFM_CHECK(!o.on_step || (o.beam_size == 1 && !o.alternatives && o.prefix_bias == 0.0))
      << "search: a step callback needs greedy search or sampling (beam size 1, no alternatives, "
      << "no prefix bias)";
  TFM_CHECK(o.prefix_bias >= 0.0 && o.prefix_bias < 1.0)
      << "search: the prefix bias must be in [0, 1), got " << o.prefix_bias;
  TFM_CHECK(o.prefix_bias == 0.0 || (o.rule == SearchRule::tfm && !o.sampling && !o.alternatives))
      << "search: the prefix bias is the tfm rule's greedy and beam search's, without "
      << "alternatives";
  TFM_CHECK(!o.return_logits || (o.rule == SearchRule::tfm && !o.alternatives))
      << "search: the logits are the tfm rule's greedy, beam and sampling searches', without "
      << "alternatives";
  TFM_CHECK(o.min_alternative_prob >= 0.0 && o.min_alternative_prob <= 1.0)
      << "search: the minimum alternative probability must be in [0, 1], got "
      << o.min_alternative_prob;
  for (int32_t t : o.end_ids)
    TFM_CHECK(t >= 0 && t < c.trg_vocab_size)
        << "search: end token " << t << " is outside [0, " << c.trg_vocab_size << ")";
  for (size_t i = 0; i < sources.size() && c.has_encoder(); ++i) {
    const int64_t specials = c.seq_format().source_specials();
    TFM_CHECK(static_cast<int64_t>(sources[i].size()) + specials <= c.max_length)
        << "search: source " << i << " has " << sources[i].size() << " tokens; the model allows "
        << c.max_length - specials << " (+ " << specials << " BOS/EOS)";
    TFM_CHECK(!sources[i].empty() || specials > 0)
        << "search: source " << i << " is empty and the model adds neither BOS nor EOS to a "
        << "source (source_bos and source_eos are false)";
    for (int32_t t : sources[i])
      TFM_CHECK(t >= 0 && t < c.src_vocab_size) << "search: source " << i << " has id " << t
                                                << " outside [0, " << c.src_vocab_size << ")";
  }
  TFM_CHECK(prefixes.empty() || prefixes.size() == sources.size())
      << "search: " << prefixes.size() << " prefixes for " << sources.size() << " sources";
  const int64_t cap = std::min(o.max_length, c.max_length);
  // The transformers rule's decoder reads a decoder-only prompt as given: it may start with BOS.
  const bool leading_bos = !c.has_encoder() && o.rule == SearchRule::transformers;
  for (size_t i = 0; i < prefixes.size(); ++i) {
    TFM_CHECK(static_cast<int64_t>(prefixes[i].size()) < cap)
        << "search: prefix " << i << " has " << prefixes[i].size() << " tokens; the max length "
        << cap << " leaves room for " << cap - 1 << " before EOS";
    for (size_t j = 0; j < prefixes[i].size(); ++j) {
      const int32_t t = prefixes[i][j];
      if (j == 0 && leading_bos && t == c.bos_id) continue;
      TFM_CHECK(t >= 0 && t < c.trg_vocab_size && t != c.pad_id && t != c.bos_id && t != c.eos_id)
          << "search: prefix " << i << " has id " << t << ", outside [0, " << c.trg_vocab_size
          << ") or PAD/BOS/EOS";
    }
  }
}

const Ids& prefix_of(const std::vector<Ids>& prefixes, size_t i) {
  static const Ids none;
  return prefixes.empty() ? none : prefixes[i];
}

int64_t framed_length(const ModelConfig& c, int64_t src_len) {
  return c.has_encoder() ? src_len + c.seq_format().source_specials() : 0;
}

DecoderState start(const Transformer& model, const std::vector<const Ids*>& sources,
                   int64_t max_len) {
  profile::Scope scope(profile::Phase::encode);
  const ModelConfig& c = model.config();
  // A decoder-only model has nothing to encode: its rows start from BOS.
  DecoderState state = c.has_encoder()
                           ? model.start(source_batch(sources, c.seq_format()))
                           : model.start_decoder_only(static_cast<int64_t>(sources.size()));
  state.reserve = max_len;
  return state;
}

Tensor step_logits(const Transformer& model, DecoderState& state,
                   const std::vector<int32_t>& tokens, Tensor* attention) {
  profile::Scope scope(profile::Phase::decoder);
  const int64_t n = static_cast<int64_t>(tokens.size());
  Tensor weights;  // (n, H, 1, S)
  Tensor logits = model.step(state, Tensor::from_vector<int32_t>({n}, tokens), nullptr,
                             attention ? &weights : nullptr);  // (n, V)
  if (attention) *attention = mean_over_heads(weights);        // (n, S)
  return logits.contiguous();
}

Tensor step_log_probs(const Transformer& model, DecoderState& state,
                      const std::vector<int32_t>& tokens, Tensor* attention,
                      const std::vector<const Ids*>& history, const SearchOptions* options) {
  Tensor logits = step_logits(model, state, tokens, attention);
  if (options) logits = process_logits(logits, history, *options);
  profile::Scope scope(profile::Phase::log_softmax);
  return log_softmax(logits).contiguous();
}

void ngram_bans(const Ids& seq, int64_t n, std::vector<int32_t>& out) {
  const int64_t len = std::ssize(seq);
  if (n <= 0 || len < n) return;
  const auto suffix = seq.end() - (n - 1);
  for (int64_t i = 0; i + n <= len; ++i)
    if (std::equal(seq.begin() + i, seq.begin() + i + n - 1, suffix))
      out.push_back(seq[static_cast<size_t>(i + n - 1)]);
}

Tensor process_logits(const Tensor& logits, const std::vector<const Ids*>& history,
                      const SearchOptions& o) {
  const bool penalty = o.repetition_penalty != 1.0;
  if (o.suppress_sequences.empty() && o.no_repeat_ngram_size == 0 && !penalty) return logits;
  const int64_t rows = logits.size(0), V = logits.size(1);
  const HostView<float> in = to_host<float>(logits);  // (rows, V)
  std::vector<float> x(in.data(), in.data() + in.size());
  const auto p = static_cast<float>(o.repetition_penalty);
  std::vector<int32_t> banned;
  for (int64_t r = 0; r < rows; ++r) {
    const Ids& h = *history[static_cast<size_t>(r)];
    float* row = x.data() + r * V;
    // Each token once, from its original logit (CTranslate2 gathers them before penalising).
    if (penalty)
      for (int32_t t : h) {
        const float l = in[static_cast<size_t>(r * V + t)];
        row[t] = l < 0.0f ? l * p : l / p;
      }
    banned.clear();
    ngram_bans(h, o.no_repeat_ngram_size, banned);
    for (const Ids& seq : o.suppress_sequences) {
      const auto before = static_cast<ptrdiff_t>(seq.size()) - 1;
      if (std::ssize(h) >= before && std::equal(seq.begin(), seq.end() - 1, h.end() - before))
        banned.push_back(seq.back());
    }
    for (int32_t t : banned) row[t] = kNegInf;
  }
  return to_device(Tensor::from_vector<float>({rows, V}, x), logits.device());
}

std::vector<float> reported_logits(const Tensor& logits, const Ids& ends, int64_t generated,
                                   const SearchOptions& o) {
  const HostView<float> in = to_host<float>(logits);  // (rows, V)
  std::vector<float> x(in.data(), in.data() + in.size());
  if (generated < o.min_length) {
    const int64_t V = logits.size(1);
    for (int64_t r = 0; r < logits.size(0); ++r)
      for (int32_t e : ends) x[static_cast<size_t>(r * V + e)] = kNegInf;
  }
  // CTranslate2 disables a token by the lowest float, not -inf (DisableTokens).
  for (float& v : x)
    if (v == kNegInf) v = std::numeric_limits<float>::lowest();
  return x;
}

Ids end_ids(const ModelConfig& c, const SearchOptions& o) {
  return o.end_ids.empty() ? Ids{static_cast<int32_t>(c.eos_id)} : o.end_ids;
}

void reorder(DecoderState& state, const std::vector<int64_t>& rows) {
  bool identity = static_cast<int64_t>(rows.size()) == state.batch();
  for (size_t i = 0; identity && i < rows.size(); ++i)
    identity = rows[i] == static_cast<int64_t>(i);
  if (identity) return;
  profile::Scope scope(profile::Phase::kv_reorder);
  state.reorder(rows);
}

StepRule step_rule(int64_t generated, int64_t prefix_length, int64_t min_length,
                   int64_t max_length) {
  if (generated < prefix_length) return StepRule::keep;        // forced by the prefix
  if (generated + 1 >= max_length) return StepRule::eos_only;  // the last position
  return generated < min_length ? StepRule::no_eos : StepRule::normal;
}

SpecialIds special_ids(const ModelConfig& c, const SearchOptions& o) {
  return {static_cast<int32_t>(c.pad_id), static_cast<int32_t>(c.bos_id), end_ids(c, o).front()};
}

void sort_hypotheses(NBest& hyps) {
  std::sort(hyps.begin(), hyps.end(), [](const Hypothesis& a, const Hypothesis& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.tokens.size() != b.tokens.size()) return a.tokens.size() < b.tokens.size();
    return a.tokens < b.tokens;
  });
}

}  // namespace detail
}  // namespace tfm::decode
