// Beam search over a batch of sentences, and greedy search as its beam-1 case.
//
// Each active sentence owns a run of consecutive rows of the DecoderState, one per live
// hypothesis (at most beam_size; fewer at the first step and near the end). A step expands every
// live hypothesis, ranks the candidates of a sentence by total log-probability, finishes EOS
// candidates that rank above the beam_size-th live candidate, and keeps the best beam_size
// non-EOS ones. Finished sentences contribute no rows to the next reorder, so work shrinks.
// While a sentence's target prefix lasts, its one hypothesis takes the prefix token instead.
#include <algorithm>
#include <cmath>
#include <utility>

#include "tfm/autograd/grad_mode.h"
#include "tfm/core/profile.h"
#include "tfm/decode/detail.h"
#include "tfm/ops/host.h"
#include "tfm/ops/index.h"
#include "tfm/ops/softmax.h"

namespace tfm::decode {
namespace {

struct Live {
  Ids tokens;
  double log_prob = 0.0;  // what the beam ranks by: the model's, or with a prefix bias the biased
  std::vector<float> attention;  // (tokens, width) with return_attention
  double model_lp = 0.0;         // the model's own log-probability (Hypothesis::log_prob)
  std::vector<float> logits;     // (steps, V) with return_logits
};

struct Sentence {
  int64_t max_len = 1;
  int64_t width = 0;  // attention row width: the framed source's positions
  const Ids* prefix = nullptr;
  // The soft prefix (SearchOptions::prefix_bias; prefix then holds none), and per beam slot
  // whether the candidate that took the slot has left it (CTranslate2's beams_diverged).
  const Ids* bias = nullptr;
  std::vector<char> diverged;
  std::vector<Live> live;
  NBest finished;
  bool done = false;
  bool best_finished = false;  // a step's best candidate was EOS (CTranslate2's rule)
  double unscored = 0.0;       // the prefix's log-prob when scores start after it
  double prefix_lp = 0.0;      // the prefix's log-prob (Hypothesis::prefix_log_prob)
};

struct Candidate {
  double log_prob;  // the ranking sum (Live::log_prob)
  int64_t hyp;
  int32_t token;
  double step_lp;         // the token's own log-probability (what log_prob added)
  double model_lp = 0.0;  // Live::model_lp
};

// CTranslate2's BiasedDecoder on one row of log-probabilities lp (V, the end tokens the step
// forbids already at -inf): log((1 - β)·p + β·onehot(t)), in f32 as it computes it.
void bias_row(float* lp, int64_t V, int32_t t, double beta) {
  const auto keep = static_cast<float>(1.0 - beta);
  for (int64_t v = 0; v < V; ++v) {
    float p = std::exp(lp[v]) * keep;
    if (v == t) p += static_cast<float>(beta);
    lp[v] = std::log(p);
  }
}

// The rows of a step that the prefix bias applies to: those of a sentence with a soft prefix
// still running whose beam slot has not left it. -1 per row without; the prefix token else.
std::vector<int32_t> biased_rows(const std::vector<Sentence>& sent,
                                 const std::vector<size_t>& active, int64_t generated) {
  std::vector<int32_t> out;
  for (size_t si : active) {
    const Sentence& s = sent[si];
    for (size_t j = 0; j < s.live.size(); ++j) {
      const bool on = s.bias && generated < std::ssize(*s.bias) && !s.diverged[j];
      out.push_back(on ? (*s.bias)[static_cast<size_t>(generated)] : -1);
    }
  }
  return out;
}

// The ranking score of a hypothesis of s with log-probability log_prob and length len (with EOS):
// without the prefix's log-probs when score_prefix is off, and for an alternative's continuation
// (SearchOptions::alternatives) the continuation's own, its length after the prefix.
double rank_score(const Sentence& s, double log_prob, int64_t len, const SearchOptions& o) {
  if (o.alternatives) return final_score(log_prob - s.prefix_lp, len - std::ssize(*s.prefix), o);
  return final_score(log_prob - s.unscored, len, o);
}

// True when no live hypothesis can reach the n_best-th finished score: log-probs only fall, so a
// live one's best completion is its current log-prob at the length that divides by the most.
bool can_stop(Sentence& s, const SearchOptions& o) {
  if (s.live.empty()) return true;
  if (o.patience > 0) {  // CTranslate2's: a count of finished hypotheses, no bound
    const auto finished = static_cast<int64_t>(s.finished.size());
    if (o.length_penalty == 0.0 && !o.normalize) return s.best_finished && finished >= o.n_best;
    return static_cast<double>(finished) >=
           std::round(static_cast<double>(o.beam_size) * o.patience);
  }
  if (!o.early_stop || static_cast<int64_t>(s.finished.size()) < o.beam_size) return false;
  detail::sort_hypotheses(s.finished);
  const double threshold = s.finished[o.n_best - 1].score;
  for (const Live& h : s.live)
    if (rank_score(s, h.log_prob, s.max_len, o) > threshold) return false;
  return true;
}

// Per row: 0, or with renormalize_min_length while the end tokens are forbidden (generated <
// min_length, a prefix's forced steps included), -log(1 - p(end tokens)): what renormalising the
// other tokens' log-probabilities over the allowed ones adds (CTranslate2 removes the forbidden
// end tokens before its softmax). Only the steps before min_length pay for the extra log-softmax.
std::vector<double> min_length_renormalization(const Tensor& logits,
                                               const std::vector<StepRule>& rules, const Ids& ends,
                                               int64_t generated, const SearchOptions& o) {
  std::vector<double> add(rules.size(), 0.0);
  auto forbidden = [&](StepRule r) {
    return r == StepRule::no_eos || (r == StepRule::keep && generated < o.min_length);
  };
  if (!o.renormalize_min_length || std::none_of(rules.begin(), rules.end(), forbidden)) return add;
  const auto rows = static_cast<int64_t>(rules.size());
  const Tensor lps = log_softmax(logits).contiguous();  // (rows, V)
  std::vector<double> p_end(rules.size(), 0.0);
  for (int32_t end : ends) {
    const Tensor picked = pick_columns(  // (rows): log p(end) of each row
        lps,
        to_device(Tensor::from_vector<int32_t>({rows}, std::vector<int32_t>(rules.size(), end)),
                  logits.device()));
    const HostView<float> lp = to_host<float>(picked);
    for (size_t i = 0; i < rules.size(); ++i) p_end[i] += std::exp(double{lp[i]});
  }
  for (size_t i = 0; i < rules.size(); ++i)
    if (forbidden(rules[i])) add[i] = -std::log1p(-p_end[i]);
  return add;
}

// The step's top k candidates of each row as top_k_log_probs ranks them, the rows with a prefix
// token (bias_tokens[r] >= 0) biased first (bias_row), renormalised over the tokens other than a
// forbidden end token where renorm says so (which the biased row then carries: its renorm becomes
// 0). model_lps: every row's own log-probabilities (rows, V), without renorm.
TopK biased_top_k(const Tensor& logits, const std::vector<StepRule>& rules,
                  const SpecialIds& specials, int64_t k, const std::vector<int32_t>& bias_tokens,
                  std::vector<double>& renorm, const Ids& ends, double beta,
                  std::vector<float>& model_lps) {
  const Tensor lp = log_softmax(logits).contiguous();  // (rows, V)
  const HostView<float> h = to_host<float>(lp);
  const int64_t rows = lp.size(0), V = lp.size(1);
  model_lps.assign(h.data(), h.data() + h.size());
  std::vector<float> x = model_lps;
  for (int64_t r = 0; r < rows; ++r) {
    const auto ru = static_cast<size_t>(r);
    if (bias_tokens[ru] < 0) continue;
    float* row = x.data() + r * V;
    const auto add = static_cast<float>(renorm[ru]);
    for (int64_t v = 0; v < V; ++v) row[v] += add;
    // CTranslate2 removes the end tokens a step forbids before its softmax, so before the bias.
    if (rules[ru] == StepRule::no_eos)
      for (int32_t e : ends) row[e] = detail::kNegInf;
    bias_row(row, V, bias_tokens[ru], beta);
    renorm[ru] = 0.0;
  }
  const Tensor biased = to_device(Tensor::from_vector<float>({rows, V}, x), logits.device());
  mask_step_rows(biased, rules, specials);
  return top_k_rows(biased, k);
}

// CTranslate2's beam slots after a biased step: the step's candidate k takes slot k, and an end
// token's slot goes to the next candidate past the beam; next (and parents, taken: the candidate
// index of each) are put in slot order. Slot k's divergence from the prefix then follows
// candidate k and the slot's own history (not the candidate's parent's, as CTranslate2 does).
void biased_slots(Sentence& s, const std::vector<Candidate>& cands, std::vector<Live>& next,
                  std::vector<int64_t>& parents, const std::vector<size_t>& taken,
                  int64_t generated, int64_t beam) {
  const auto B = static_cast<size_t>(beam);
  std::vector<char> div(B, 1);
  for (size_t k = 0; k < B && k < cands.size(); ++k)
    div[k] = generated >= std::ssize(*s.bias) || s.diverged[k] ||
             cands[k].token != (*s.bias)[static_cast<size_t>(generated)];
  s.diverged = std::move(div);
  std::vector<size_t> slot(next.size());
  std::vector<char> used(B + next.size(), 0);
  for (size_t i = 0; i < next.size(); ++i)
    if (taken[i] < B) used[slot[i] = taken[i]] = 1;
  size_t free = 0;
  for (size_t i = 0; i < next.size(); ++i) {
    if (taken[i] < B) continue;
    while (used[free]) ++free;
    used[slot[i] = free] = 1;
  }
  std::vector<size_t> order(next.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return slot[a] < slot[b]; });
  std::vector<Live> nl;
  std::vector<int64_t> np;
  for (size_t i : order) {
    nl.push_back(std::move(next[i]));
    if (i < parents.size()) np.push_back(parents[i]);
  }
  next = std::move(nl);
  parents = std::move(np);
}

class BeamSearch : public Search {
 public:
  explicit BeamSearch(const SearchOptions& o) : o_(o) {}

  std::vector<NBest> run(const Transformer& model, const std::vector<Ids>& sources,
                         const std::vector<uint64_t>& ids,
                         const std::vector<Ids>& prefixes) const override {
    profile::Scope scope(profile::Phase::search);
    detail::check_inputs(model, sources, o_, prefixes);
    const ModelConfig& c = model.config();
    const int64_t V = c.trg_vocab_size, beam = o_.beam_size;
    const Ids ends = detail::end_ids(c, o_);
    auto is_end = [&](int32_t t) { return std::find(ends.begin(), ends.end(), t) != ends.end(); };
    NoGradGuard no_grad;
    std::vector<NBest> out(sources.size());
    if (sources.empty()) return out;

    // A soft prefix (prefix_bias) is no forced one: the steps below see none.
    const bool biased = o_.prefix_bias > 0.0;
    const std::vector<Ids> no_prefixes;
    const std::vector<Ids>& forced = biased ? no_prefixes : prefixes;
    std::vector<Sentence> sent(sources.size());
    std::vector<const Ids*> ptrs;
    for (size_t i = 0; i < sources.size(); ++i) {
      const int64_t src_len = static_cast<int64_t>(sources[i].size());
      sent[i].prefix = &detail::prefix_of(forced, i);
      if (biased) {
        sent[i].bias = &detail::prefix_of(prefixes, i);
        sent[i].diverged.assign(static_cast<size_t>(beam), 0);
      }
      sent[i].max_len =
          max_target_length(c, o_, src_len, static_cast<int64_t>(sent[i].prefix->size()));
      sent[i].width = detail::framed_length(c, src_len);
      sent[i].live.push_back(Live{});
      ptrs.push_back(&sources[i]);
    }
    std::vector<size_t> active(sources.size());
    for (size_t i = 0; i < active.size(); ++i) active[i] = i;
    int64_t longest = 1;
    for (const Sentence& s : sent) longest = std::max(longest, s.max_len);
    DecoderState state = detail::start(model, ptrs, longest);
    std::vector<int32_t> tokens(sources.size(), static_cast<int32_t>(c.bos_id));
    std::vector<Candidate> cands;
    const SpecialIds specials = detail::special_ids(c, o_);
    // beam + the end tokens a hypothesis suffice: the walk below stops after beam non-end ones.
    const int64_t k = std::min<int64_t>(V, beam + std::ssize(ends));
    // Greedy search without scores ranks logits (top_k_logits) and ends at the first end token.
    const bool unscored = unscored_greedy(o_);

    for (int64_t generated = 0; !active.empty(); ++generated) {
      Tensor attn;                      // (rows, S)
      std::vector<const Ids*> history;  // each row's tokens so far (process_logits)
      for (size_t si : active)
        for (const Live& h : sent[si].live) history.push_back(&h.tokens);
      const Tensor logits = detail::process_logits(  // (rows, V)
          detail::step_logits(model, state, tokens, attention() ? &attn : nullptr), history, o_);
      const int64_t rows_now = logits.size(0);
      // Each row's rule, and the token a prefix forces (its log-prob is picked on the device).
      std::vector<StepRule> rules;
      std::vector<int32_t> forced(static_cast<size_t>(rows_now), 0);
      bool any_forced = false;
      for (size_t si : active) {
        const Sentence& s = sent[si];
        const bool in_prefix = generated < static_cast<int64_t>(s.prefix->size());
        if (in_prefix) {
          forced[rules.size()] = (*s.prefix)[generated];
          any_forced = true;
        }
        rules.insert(rules.end(), s.live.size(),
                     detail::step_rule(generated, static_cast<int64_t>(s.prefix->size()),
                                       o_.min_length, s.max_len));
      }
      profile::Scope masks(profile::Phase::top_k);
      // Per row, what renormalising over the tokens other than a forbidden EOS adds (0 else).
      std::vector<double> renorm =  // a row's constant: no ranking within the row needs it
          unscored ? std::vector<double>(rules.size(), 0.0)
                   : min_length_renormalization(logits, rules, ends, generated, o_);
      const std::vector<double> model_renorm = renorm;  // what a row's own log-probs take
      const std::vector<int32_t> bias_tokens =
          biased ? biased_rows(sent, active, generated) : std::vector<int32_t>{};
      const bool any_biased =
          std::any_of(bias_tokens.begin(), bias_tokens.end(), [](int32_t t) { return t >= 0; });
      std::vector<float> model_lps;  // (rows, V): the rows' own log-probs, in a biased step
      // The log-probs are written out only when a prefix needs a forced token's (or a biased
      // row its own); otherwise each row is normalised, masked and ranked in one pass.
      TopK top;
      HostView<float> forced_lp;
      if (any_biased) {
        top = biased_top_k(logits, rules, specials, k, bias_tokens, renorm, ends, o_.prefix_bias,
                           model_lps);
      } else if (any_forced) {
        const Tensor lp = log_softmax(logits).contiguous();  // (rows, V)
        mask_step_rows(lp, rules, specials);
        top = top_k_rows(lp, k);
        forced_lp = to_host<float>(
            pick_columns(lp, to_device(Tensor::from_vector<int32_t>({rows_now}, forced),
                                       lp.device())));  // (rows)
      } else if (unscored) {
        top = top_k_logits(logits, rules, specials, k);
      } else {
        top = top_k_log_probs(logits, rules, specials, k);
      }
      const HostView<float> top_vals = to_host<float>(top.values);  // (rows, k)
      const HostView<int32_t> top_ids = to_host<int32_t>(top.ids);  // (rows, k)
      masks.end();
      const HostView<float> attn_h = to_host<float>(attn);  // (rows, S), empty without
      const float* ad = attention() ? attn_h.data() : nullptr;
      const int64_t S = attention() ? attn.size(1) : 0;
      const std::vector<float> lg =  // (rows, V): the logits return_logits reports
          o_.return_logits ? detail::reported_logits(logits, ends, generated, o_)
                           : std::vector<float>{};
      const int64_t V_lg = logits.size(1);
      // h extended by token t of row `row`: its attention gains that row's (the padding cut),
      // its logits that row's.
      auto extend = [&](const Live& h, int64_t row, int32_t t, double log_prob, double model_lp,
                        int64_t width) {
        Live nh{h.tokens, log_prob, {}, model_lp, {}};
        nh.tokens.push_back(t);
        if (ad) {
          nh.attention.reserve(h.attention.size() + static_cast<size_t>(width));
          nh.attention = h.attention;
          nh.attention.insert(nh.attention.end(), ad + row * S, ad + row * S + width);
        }
        if (o_.return_logits) {
          nh.logits.reserve(h.logits.size() + static_cast<size_t>(V_lg));
          nh.logits = h.logits;
          nh.logits.insert(nh.logits.end(), lg.begin() + row * V_lg, lg.begin() + (row + 1) * V_lg);
        }
        return nh;
      };
      // A candidate's own log-probability of its token at row `row`, top entry i.
      auto model_step = [&](int64_t row, size_t i) {
        const auto ru = static_cast<size_t>(row);
        const double lp = !bias_tokens.empty() && bias_tokens[ru] >= 0
                              ? double{model_lps[ru * static_cast<size_t>(V_lg) +
                                                 static_cast<size_t>(top_ids[i])]}
                              : double{top_vals[i]};
        return lp + model_renorm[ru];
      };
      std::vector<int64_t> rows;  // parents of the next step's rows, in the old state
      std::vector<int32_t> next_tokens;
      std::vector<size_t> still_active;
      int64_t r = 0;  // first row of the current sentence
      for (size_t si : active) {
        Sentence& s = sent[si];
        const int64_t n = static_cast<int64_t>(s.live.size());
        if (generated < static_cast<int64_t>(s.prefix->size())) {
          // Forced: the sentence's one hypothesis (beams share the prefix) takes the prefix
          // token at its model log-probability; max_len leaves room for EOS after it.
          TFM_CHECK(n == 1) << "beam search: " << n << " hypotheses inside a prefix";
          const int32_t t = (*s.prefix)[generated];
          const double lp = forced_lp[static_cast<size_t>(r)] + renorm[static_cast<size_t>(r)];
          s.live[0] =
              extend(s.live[0], r, t, s.live[0].log_prob + lp, s.live[0].model_lp + lp, s.width);
          if (!o_.score_prefix) s.unscored += lp;
          s.prefix_lp += lp;
          if (detail::report_step(o_, {id_of(ids, si), generated, t, lp, true, false})) {
            finish_cut(s, std::move(s.live[0]));
            r += n;
            continue;
          }
          rows.push_back(r);
          next_tokens.push_back(t);
          still_active.push_back(si);
          r += n;
          continue;
        }
        cands.clear();
        for (int64_t j = 0; j < n; ++j) {
          const size_t row = static_cast<size_t>((r + j) * k);
          const StepRule rule = rules[static_cast<size_t>(r + j)];
          for (size_t i = row; i < row + static_cast<size_t>(k); ++i)
            if (top_vals[i] != detail::kNegInf &&
                (top_ids[i] == specials.eos || !is_end(top_ids[i]) ||
                 detail::other_end_allowed(rule)))
              cands.push_back(
                  {s.live[j].log_prob + top_vals[i] + renorm[static_cast<size_t>(r + j)], j,
                   top_ids[i], top_vals[i] + renorm[static_cast<size_t>(r + j)],
                   s.live[j].model_lp + model_step(r + j, i)});
        }
        std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
          if (a.log_prob != b.log_prob) return a.log_prob > b.log_prob;
          return a.hyp != b.hyp ? a.hyp < b.hyp : a.token < b.token;
        });
        // With a step callback (beam 1): the best candidate, reported; it ends the sentence when
        // it is an end token, the last token or the callback says so, else it goes on alone.
        // Unscored greedy search takes the same path, reporting nothing.
        if ((o_.on_step || unscored) && !cands.empty()) {
          const Candidate& cd = cands[0];
          const bool end = is_end(cd.token);
          const bool last = o_.cut_at_max_length && generated + 2 >= s.max_len;
          const bool stop = detail::report_step(
              o_, {id_of(ids, si), generated, cd.token, cd.step_lp, false, end || last});
          if (end || last || stop) {
            Live nh =
                extend(s.live[cd.hyp], r + cd.hyp, cd.token, cd.log_prob, cd.model_lp, s.width);
            if (end) {
              const double cover = coverage(nh.attention, s.width);  // the end token's row too
              const Live& h = s.live[cd.hyp];
              s.finished.push_back(
                  {h.tokens, rank_score(s, cd.log_prob, std::ssize(h.tokens) + 1, o_) + cover,
                   cd.model_lp, h.attention, true, cd.token, s.prefix_lp, std::move(nh.logits)});
              s.live.clear();
              s.done = true;
            } else {
              finish_cut(s, std::move(nh));
            }
            r += n;
            continue;
          }
          cands.resize(1);
        }
        std::vector<Live> next;
        std::vector<int64_t> parents;
        std::vector<size_t> taken;  // each of next's candidate index
        if (!cands.empty() && is_end(cands[0].token)) s.best_finished = true;
        // CTranslate2's last step (cut_at_max_length): its beam best candidates all finish.
        const bool last = o_.cut_at_max_length && generated + 2 >= s.max_len;
        for (size_t at = 0; at < cands.size(); ++at) {
          if (last && std::cmp_greater_equal(at, beam)) break;
          const Candidate& cd = cands[at];
          const Live& h = s.live[cd.hyp];
          // CTranslate2 finishes EOS among the beam's best candidates only, and only as the best
          // one at the first step after the target prefixes (when the call has any).
          const bool first_free =
              !forced.empty() && generated == std::ssize(*s.prefix) && !o_.alternatives;
          if (is_end(cd.token) && o_.patience > 0 &&
              (std::cmp_greater_equal(at, beam) || (first_free && at > 0)))
            continue;
          if (is_end(cd.token)) {  // the end token gets no attention row
            const int64_t len = static_cast<int64_t>(h.tokens.size()) + 1;
            Live ended = extend(h, r + cd.hyp, cd.token, 0, 0, s.width);
            // The coverage penalty counts the end token's row (CTranslate2's hypotheses hold it).
            const double cover = coverage(ended.attention, s.width);
            s.finished.push_back({h.tokens, rank_score(s, cd.log_prob, len, o_) + cover,
                                  cd.model_lp, h.attention, true, cd.token, s.prefix_lp,
                                  std::move(ended.logits)});
            continue;
          }
          next.push_back(extend(h, r + cd.hyp, cd.token, cd.log_prob, cd.model_lp, s.width));
          taken.push_back(at);
          if (last) {  // cut without an end token
            Live& c = next.back();
            const double score = rank_score(s, cd.log_prob, std::ssize(c.tokens), o_) +
                                 coverage(c.attention, s.width);
            s.finished.push_back({std::move(c.tokens), score, cd.model_lp, std::move(c.attention),
                                  false, -1, s.prefix_lp, std::move(c.logits)});
            next.pop_back();
            taken.pop_back();
            continue;
          }
          parents.push_back(r + cd.hyp);
          if (static_cast<int64_t>(next.size()) == beam) break;
        }
        r += n;
        if (s.bias) biased_slots(s, cands, next, parents, taken, generated, beam);
        s.live = std::move(next);
        if (last || can_stop(s, o_)) {
          s.done = true;
          continue;
        }
        for (size_t j = 0; j < s.live.size(); ++j) {
          rows.push_back(parents[j]);
          next_tokens.push_back(s.live[j].tokens.back());
        }
        still_active.push_back(si);
      }
      active = std::move(still_active);
      if (active.empty()) break;
      detail::reorder(state, rows);
      tokens = std::move(next_tokens);
    }
    for (size_t i = 0; i < sent.size(); ++i) {
      detail::sort_hypotheses(sent[i].finished);
      NBest& f = sent[i].finished;
      if (static_cast<int64_t>(f.size()) > o_.n_best) f.resize(o_.n_best);
      if (!o_.return_attention)  // kept for the coverage penalty alone
        for (Hypothesis& h : f) h.attention.clear();
      out[i] = std::move(f);
    }
    return out;
  }

 private:
  static uint64_t id_of(const std::vector<uint64_t>& ids, size_t i) {
    return ids.empty() ? static_cast<uint64_t>(i) : ids[i];
  }

  // Ends s with its hypothesis h as it is, without an end token (a step callback's stop).
  void finish_cut(Sentence& s, Live&& h) const {
    const double score =
        rank_score(s, h.log_prob, std::ssize(h.tokens), o_) + coverage(h.attention, s.width);
    s.finished.push_back({std::move(h.tokens), score, h.model_lp, std::move(h.attention), false, -1,
                          s.prefix_lp, std::move(h.logits)});
    s.live.clear();
    s.done = true;
  }

  // Whether the steps keep attention rows: asked for, or for the coverage penalty.
  bool attention() const { return o_.return_attention || o_.coverage_penalty != 0.0; }
  // CTranslate2's coverage penalty of attention rows (tokens, width): β · Σ over the source
  // positions attended at all of log(min(their summed attention, 1)); 0 without.
  double coverage(const std::vector<float>& rows, int64_t width) const {
    if (o_.coverage_penalty == 0.0 || width == 0) return 0.0;
    float penalty = 0.0f;  // in f32, as CTranslate2 sums it
    for (int64_t col = 0; col < width; ++col) {
      float sum = 0.0f;
      for (size_t at = static_cast<size_t>(col); at < rows.size(); at += static_cast<size_t>(width))
        sum += rows[at];
      if (sum > 0.0f) penalty += std::log(std::min(sum, 1.0f));
    }
    return o_.coverage_penalty * penalty;
  }

  SearchOptions o_;
};

}  // namespace

std::unique_ptr<Search> make_beam(const SearchOptions& o) {
  return std::make_unique<BeamSearch>(o);
}

std::unique_ptr<Search> make_greedy(const SearchOptions& o) {
  SearchOptions g = o;
  TFM_CHECK(o.beam_size == 1) << "greedy search: beam size must be 1, got " << o.beam_size;
  g.sampling = false;
  return std::make_unique<BeamSearch>(g);
}

}  // namespace tfm::decode
