#include "tfm/decode/search.h"

#include <algorithm>
#include <cmath>

#include "tfm/decode/detail.h"
#include "tfm/ops/softmax.h"

namespace tfm::decode {

double final_score(double log_prob, int64_t len, const SearchOptions& o) {
  if (o.normalize) return log_prob / static_cast<double>(std::max<int64_t>(len, 1));
  if (o.length_penalty == 0.0) return log_prob;
  return log_prob / std::pow((5.0 + static_cast<double>(len)) / 6.0, o.length_penalty);
}

int64_t max_target_length(const ModelConfig& c, const SearchOptions& o, int64_t src_len) {
  const double by_source = o.max_length_a * static_cast<double>(src_len) + o.max_length_b;
  int64_t n = static_cast<int64_t>(std::floor(by_source));
  n = std::min({n, o.max_length, c.max_length});  // the decoder reads positions 0 … n-1
  return std::max<int64_t>(n, 1);
}

std::unique_ptr<Search> make_search(const SearchOptions& o) {
  if (o.sampling) return make_sampling(o);
  if (o.beam_size == 1) return make_greedy(o);
  return make_beam(o);
}

namespace detail {

void check_inputs(const Transformer& model, const std::vector<Ids>& sources,
                  const SearchOptions& o) {
  const ModelConfig& c = model.config();
  TFM_CHECK(c.has_encoder()) << "search: decoder-only models are not supported yet";
  TFM_CHECK(o.beam_size >= 1) << "search: beam size must be >= 1, got " << o.beam_size;
  TFM_CHECK(o.n_best >= 1 && o.n_best <= o.beam_size)
      << "search: n_best must be in [1, beam size " << o.beam_size << "], got " << o.n_best;
  TFM_CHECK(!o.sampling || o.beam_size == 1) << "search: sampling needs beam size 1";
  TFM_CHECK(o.top_p > 0.0 && o.top_p <= 1.0) << "search: top-p must be in (0, 1], got " << o.top_p;
  TFM_CHECK(o.top_k >= 0) << "search: top-k must be >= 0, got " << o.top_k;
  for (size_t i = 0; i < sources.size(); ++i) {
    TFM_CHECK(static_cast<int64_t>(sources[i].size()) + 1 <= c.max_length)
        << "search: source " << i << " has " << sources[i].size() << " tokens; the model allows "
        << c.max_length - 1 << " (+ EOS)";
    for (int32_t t : sources[i])
      TFM_CHECK(t >= 0 && t < c.src_vocab_size) << "search: source " << i << " has id " << t
                                                << " outside [0, " << c.src_vocab_size << ")";
  }
}

DecoderState start(const Transformer& model, const std::vector<const Ids*>& sources,
                   int64_t max_len) {
  const ModelConfig& c = model.config();
  DecoderState state = model.start(source_batch(sources, c.pad_id, c.eos_id));
  state.reserve = max_len;
  return state;
}

Tensor step_log_probs(const Transformer& model, DecoderState& state,
                      const std::vector<int32_t>& tokens) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  Tensor logits = model.step(state, Tensor::from_vector<int32_t>({n}, tokens));  // (n, V)
  return log_softmax(logits).contiguous();
}

void reorder(DecoderState& state, const std::vector<int64_t>& rows) {
  bool identity = static_cast<int64_t>(rows.size()) == state.batch();
  for (size_t i = 0; identity && i < rows.size(); ++i)
    identity = rows[i] == static_cast<int64_t>(i);
  if (!identity) state.reorder(rows);
}

void mask_row(float* row, int64_t vocab, const ModelConfig& c, int64_t generated,
              int64_t min_length, int64_t max_length) {
  if (generated + 1 >= max_length) {  // the last position: EOS only
    const float eos = row[c.eos_id];
    std::fill(row, row + vocab, kNegInf);
    row[c.eos_id] = eos;
    return;
  }
  row[c.pad_id] = kNegInf;
  row[c.bos_id] = kNegInf;
  if (generated < min_length) row[c.eos_id] = kNegInf;
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
