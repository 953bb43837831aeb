// Ancestral sampling: one row per sentence; temperature, then top-k, then top-p (nucleus).
//
// The draw for step t of a sentence is uniform_f64(t) of RandomStream(seed, id), where id is the
// sentence's stable id, so a sample does not depend on batching, batch order or thread count.
// The steps of a target prefix take its tokens and draw nothing.
#include <algorithm>
#include <cmath>

#include "tfm/autograd/grad_mode.h"
#include "tfm/core/profile.h"
#include "tfm/core/rng.h"
#include "tfm/decode/detail.h"
#include "tfm/ops/host.h"
#include "tfm/ops/softmax.h"

namespace tfm::decode {
namespace {

// Picks a token of a masked log-prob row (at least one entry finite).
int32_t pick(const float* row, int64_t vocab, const SearchOptions& o, double u,
             std::vector<int32_t>& order, std::vector<double>& p) {
  order.clear();
  for (int32_t v = 0; v < vocab; ++v)
    if (row[v] != detail::kNegInf) order.push_back(v);
  auto better = [&](int32_t x, int32_t y) { return row[x] != row[y] ? row[x] > row[y] : x < y; };
  if (o.temperature <= 0.0 || o.top_k == 1)  // the limit of temperature -> 0: argmax
    return *std::min_element(order.begin(), order.end(), better);
  size_t keep = order.size();
  if (o.top_k > 0) keep = std::min<size_t>(keep, static_cast<size_t>(o.top_k));
  std::partial_sort(order.begin(), order.begin() + static_cast<int64_t>(keep), order.end(), better);
  order.resize(keep);
  // softmax(logp / T) over the kept tokens, in double; the best token has weight 1.
  p.resize(keep);
  const double top = row[order[0]];
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) total += p[i] = std::exp((row[order[i]] - top) / o.temperature);
  if (o.top_p < 1.0) {  // the smallest prefix holding top_p of the mass
    double cum = 0.0;
    size_t n = 0;
    while (n < keep) {
      cum += p[n++] / total;
      if (cum >= o.top_p) break;
    }
    keep = n;
    total = 0.0;
    for (size_t i = 0; i < keep; ++i) total += p[i];
  }
  double target = u * total;
  for (size_t i = 0; i < keep; ++i) {
    target -= p[i];
    if (target < 0.0) return order[i];
  }
  return order[keep - 1];  // rounding at the top end
}

// lp (rows, V) on the host with -inf for the end tokens after the first in the rows whose rule
// forbids them (detail::other_end_allowed).
HostView<float> mask_other_ends(const Tensor& lp, const std::vector<StepRule>& rules,
                                const Ids& ends) {
  const HostView<float> in = to_host<float>(lp);
  std::vector<float> x(in.data(), in.data() + in.size());
  const int64_t V = lp.size(1);
  for (size_t r = 0; r < rules.size(); ++r)
    if (!detail::other_end_allowed(rules[r]))
      for (size_t e = 1; e < ends.size(); ++e)
        x[r * static_cast<size_t>(V) + static_cast<size_t>(ends[e])] = detail::kNegInf;
  return to_host<float>(Tensor::from_vector<float>({lp.size(0), V}, x));
}

class SamplingSearch : public Search {
 public:
  explicit SamplingSearch(const SearchOptions& o) : o_(o) {}

  std::vector<NBest> run(const Transformer& model, const std::vector<Ids>& sources,
                         const std::vector<uint64_t>& ids,
                         const std::vector<Ids>& prefixes) const override {
    profile::Scope scope(profile::Phase::search);
    detail::check_inputs(model, sources, o_, prefixes);
    TFM_CHECK(ids.size() == sources.size() || ids.empty()) << "sampling: " << ids.size() << " ids";
    const ModelConfig& c = model.config();
    const int64_t V = c.trg_vocab_size;
    NoGradGuard no_grad;
    std::vector<NBest> out(sources.size());
    if (sources.empty()) return out;
    std::vector<const Ids*> ptrs;
    std::vector<int64_t> max_len, width;
    std::vector<Hypothesis> hyp(sources.size());
    std::vector<double> unscored(sources.size(), 0.0);  // prefix log-probs the score leaves out
    std::vector<size_t> active(sources.size());
    for (size_t i = 0; i < sources.size(); ++i) {
      const int64_t src_len = std::ssize(sources[i]);
      ptrs.push_back(&sources[i]);
      max_len.push_back(
          max_target_length(c, o_, src_len, std::ssize(detail::prefix_of(prefixes, i))));
      width.push_back(detail::framed_length(c, src_len));
      active[i] = i;
    }
    DecoderState state =
        detail::start(model, ptrs, *std::max_element(max_len.begin(), max_len.end()));
    std::vector<int32_t> tokens(sources.size(), static_cast<int32_t>(c.bos_id));
    std::vector<int32_t> order;  // pick()'s buffers
    std::vector<double> p;
    const Ids ends = detail::end_ids(c, o_);
    for (int64_t generated = 0; !active.empty(); ++generated) {
      Tensor attn;            // (rows, S)
      std::vector<float> lg;  // (rows, V): what return_logits reports
      Tensor lp = step(model, state, tokens, o_.return_attention ? &attn : nullptr, hyp, active,
                       ends, generated, lg);  // (rows, V)
      std::vector<StepRule> rules;
      for (size_t si : active)
        rules.push_back(detail::step_rule(generated, std::ssize(detail::prefix_of(prefixes, si)),
                                          o_.min_length, max_len[si]));
      mask_step_rows(lp, rules, detail::special_ids(c, o_));
      // Sampling reads whole distributions: on the host (a copy from a device, a view on the CPU).
      const HostView<float> lph =
          ends.size() > 1 ? mask_other_ends(lp, rules, ends) : to_host<float>(lp);  // (rows, V)
      const HostView<float> attn_h = to_host<float>(attn);  // (rows, S), empty without
      std::vector<int64_t> rows;
      std::vector<int32_t> next_tokens;
      std::vector<size_t> still_active;
      for (size_t r = 0; r < active.size(); ++r) {
        const size_t si = active[r];
        const float* row = lph.data() + static_cast<int64_t>(r) * V;
        const Ids& prefix = detail::prefix_of(prefixes, si);
        const uint64_t id = ids.empty() ? si : ids[si];
        const int32_t t = choose(prefix, generated, id, row, V, order, p);
        Hypothesis& h = hyp[si];
        const bool end = std::find(ends.begin(), ends.end(), t) != ends.end();
        const bool in_prefix = generated < std::ssize(prefix);
        record(
            h, t, end, row[t], in_prefix, unscored[si],
            o_.return_attention ? attn_h.data() + static_cast<int64_t>(r) * attn.size(1) : nullptr,
            width[si], lg.empty() ? nullptr : lg.data() + static_cast<int64_t>(r) * V, V);
        // The last token: an end token, or CTranslate2's last step (cut without an end token);
        // a step callback's true cuts there too.
        const bool last = end || (o_.cut_at_max_length && generated + 2 >= max_len[si]);
        if (detail::report_step(o_, {id, generated, t, row[t], in_prefix, last}) || last) {
          h.eos = end;
          h.score = score(h, std::ssize(prefix), unscored[si]);
          out[si].push_back(std::move(h));
          continue;
        }
        rows.push_back(static_cast<int64_t>(r));
        next_tokens.push_back(t);
        still_active.push_back(si);
      }
      active = std::move(still_active);
      if (active.empty()) break;
      detail::reorder(state, rows);
      tokens = std::move(next_tokens);
    }
    return out;
  }

 private:
  // One step's log-probabilities (rows, V) of the active sentences' rows after the logits
  // processors (their history: the hypotheses' tokens so far); `reported`, with return_logits:
  // the processed logits as Hypothesis::logits keeps them (rows, V).
  Tensor step(const Transformer& model, DecoderState& state, const std::vector<int32_t>& tokens,
              Tensor* attn, const std::vector<Hypothesis>& hyp, const std::vector<size_t>& active,
              const Ids& ends, int64_t generated, std::vector<float>& reported) const {
    std::vector<const Ids*> history;
    for (size_t si : active) history.push_back(&hyp[si].tokens);
    const Tensor logits =
        detail::process_logits(detail::step_logits(model, state, tokens, attn), history, o_);
    if (o_.return_logits) reported = detail::reported_logits(logits, ends, generated, o_);
    return log_softmax(logits).contiguous();
  }

  // h takes token t (an end token when `end`: its end_id, else one of its tokens) of
  // log-probability lp (a prefix's when in_prefix), its attention row `attn` (width values; none
  // when null; an end token gets none) and its step's logits row (V values; none when null).
  void record(Hypothesis& h, int32_t t, bool end, float lp, bool in_prefix, double& unscored,
              const float* attn, int64_t width, const float* logits, int64_t V) const {
    if (end)
      h.end_id = t;
    else
      h.tokens.push_back(t);
    h.log_prob += lp;
    if (in_prefix) h.prefix_log_prob += lp;
    if (in_prefix && !o_.score_prefix) unscored += lp;
    if (attn && !end) h.attention.insert(h.attention.end(), attn, attn + width);
    if (logits) h.logits.insert(h.logits.end(), logits, logits + V);
  }

  // A finished hypothesis' score: without the prefix's log-probs when score_prefix is off; an
  // alternative's continuation (SearchOptions::alternatives) scores after its prefix.
  double score(const Hypothesis& h, int64_t prefix_len, double unscored) const {
    const int64_t len = std::ssize(h.tokens) + (h.eos ? 1 : 0) - (o_.alternatives ? prefix_len : 0);
    return final_score(h.log_prob - (o_.alternatives ? h.prefix_log_prob : unscored), len, o_);
  }

  // The prefix's token while it lasts (forced; max_len leaves room for EOS after it), else a
  // draw from the sentence's random stream (keyed by its id).
  int32_t choose(const Ids& prefix, int64_t generated, uint64_t id, const float* row, int64_t V,
                 std::vector<int32_t>& order, std::vector<double>& p) const {
    if (generated < std::ssize(prefix)) return static_cast<int32_t>(prefix[generated]);
    const double u = RandomStream(o_.seed, id).uniform_f64(static_cast<uint64_t>(generated));
    return pick(row, V, o_, u, order, p);
  }

  SearchOptions o_;
};

}  // namespace

std::unique_ptr<Search> make_sampling(const SearchOptions& o) {
  return std::make_unique<SamplingSearch>(o);
}

}  // namespace tfm::decode
