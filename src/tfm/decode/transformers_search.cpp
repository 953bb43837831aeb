// The transformers search rule (search.h): greedy and beam search as Hugging Face Transformers'
// generate() runs them (generation/utils.py, _sample and _beam_search, with the logits
// processors of the generation config), so that a converted model gives generate()'s tokens.
//
// Each sentence has a decoder prompt D: the decoder's start token (tfm's BOS) and the target
// prefix for an encoder-decoder model; the prompt itself for a decoder-only one (BOS when empty).
// All rows step in lockstep, one position a step: while a sentence's prompt lasts its one row
// is fed the prompt's tokens; from the prompt's last token on, each step is a generate() step at
// cur_len = decoder tokens so far. generate()'s max_length and min_length count D; tfm's count
// an encoder-decoder model's output (the prefix and what follows: D less its start token) and a
// decoder-only model's D itself. Scores accumulate in f32 as generate()'s.
#include <algorithm>
#include <cmath>

#include "tfm/autograd/grad_mode.h"
#include "tfm/core/device_copy.h"
#include "tfm/core/profile.h"
#include "tfm/decode/detail.h"
#include "tfm/ops/host.h"
#include "tfm/ops/index.h"
#include "tfm/ops/softmax.h"

namespace tfm::decode {
namespace {

struct Beam {
  Ids tokens;  // generated so far (D excluded)
  float score = 0.0f;
  std::vector<float> attention;
};

struct Finished {
  Ids tokens;
  float score = 0.0f;  // sum / length^length_penalty
  float sum = 0.0f;
  bool eos = true;
  std::vector<float> attention;
};

struct Sentence {
  int32_t eos = 0;
  Ids prompt;                              // D, fed one token a step
  int64_t output_from = 0;                 // D[output_from:] is part of the output (the prefix)
  int64_t max_length = 0, min_length = 0;  // generate()'s, D counted
  int64_t width = 0;                       // attention row width
  std::vector<Beam> live;
  std::vector<Finished> finished;  // best first, at most beam_size
  std::vector<float> prompt_attention;
  bool heuristic_open = true;  // generate's is_early_stop_heuristic_unsatisfied
  bool done = false;
};

// One step's top-k of every row (rows, k), and the attention rows (rows, stride) when asked for.
struct StepView {
  const float* vals;
  const int32_t* ids;
  int64_t k;     // entries a row
  int64_t keep;  // candidates a row keeps after the bans (2 · beam; 1 for greedy)
  const float* attn;
  int64_t stride;
  // With renormalize_min_length: each row's log-probability of EOS (rows), else null.
  const float* eos_log_probs;
};

// Each row's log-probability of `eos` (rows), from the step's logits (rows, V).
Tensor eos_log_probs(const Tensor& logits, int64_t eos) {
  const std::vector<int32_t> cols(static_cast<size_t>(logits.size(0)), static_cast<int32_t>(eos));
  return pick_columns(
      log_softmax(logits),
      to_device(Tensor::from_vector<int32_t>({logits.size(0)}, cols), logits.device()));
}

struct Candidate {
  float value;
  int64_t beam;
  int32_t token;
};

class TransformersSearch : public Search {
 public:
  explicit TransformersSearch(const SearchOptions& o) : o_(o) {}

  std::vector<NBest> run(const Transformer& model, const std::vector<Ids>& sources,
                         const std::vector<uint64_t>& /*ids*/,
                         const std::vector<Ids>& prefixes) const override;

 private:
  // Sentence state for `source` with its target prefix (D, the lengths in generate()'s terms).
  Sentence make_sentence(const ModelConfig& c, const Ids& source, const Ids& prefix) const;
  // generate()'s input_ids of beam b: D and what b generated.
  static Ids input_ids(const Sentence& s, const Beam& b);
  // Top-k entries a row needs at step t so that `k_base` survive every live beam's bans.
  int64_t top_k_width(const std::vector<Sentence>& sent, const std::vector<size_t>& active,
                      int64_t t, int64_t k_base) const;
  // Step t of sentence s, whose rows start at r: its prompt's next token, or a generate() step.
  // Appends the rows to keep (parents) and their next tokens; false once the sentence is done.
  // id: the sentence's (SearchOptions::on_step).
  bool advance(Sentence& s, int64_t t, int64_t r, const StepView& v, std::vector<int64_t>& parents,
               std::vector<int32_t>& next_tokens, uint64_t id) const;
  // The finished hypotheses, the prefix in front, n_best of them.
  NBest results(Sentence& s) const;
  // What generate()'s logits processors leave of row r's candidates at this step: the best
  // `keep` (log-prob, token) pairs, banned tokens dropped; a forced token alone at 0.
  // eos_lp: the row's log-probability of EOS, for renormalize_min_length (NaN: not known).
  std::vector<std::pair<float, int32_t>> candidates(const Sentence& s, const Ids& seq,
                                                    const float* vals, const int32_t* ids,
                                                    int64_t k, int64_t keep, float eos_lp) const;
  // The tokens generate()'s processors ban after input_ids `seq` (D and what was generated).
  std::vector<int32_t> banned(const Sentence& s, const Ids& seq) const;
  // One generate() step of sentence s: its beams' candidates -> its new beams and finished list.
  void beam_step(Sentence& s, std::vector<std::vector<std::pair<float, int32_t>>>& rows,
                 int64_t cur_len, int64_t first_row, const float* attn, int64_t stride,
                 std::vector<int64_t>& parents) const;
  // id: the sentence's (SearchOptions::on_step).
  void greedy_step(Sentence& s, const std::vector<std::pair<float, int32_t>>& row, int64_t cur_len,
                   const float* attn, uint64_t id) const;

  SearchOptions o_;
};

std::vector<int32_t> TransformersSearch::banned(const Sentence& s, const Ids& seq) const {
  std::vector<int32_t> out;
  const int64_t cur_len = static_cast<int64_t>(seq.size());
  // NoBadWordsLogitsProcessor: a sequence's last token, once the rest ends input_ids.
  for (const Ids& bad : o_.bad_words_ids) {
    const int64_t n = static_cast<int64_t>(bad.size()) - 1;
    if (n > cur_len) continue;
    if (std::equal(bad.begin(), bad.end() - 1, seq.end() - n)) out.push_back(bad.back());
  }
  // NoRepeatNGramLogitsProcessor: the token that would complete an n-gram already in input_ids.
  detail::ngram_bans(seq, o_.no_repeat_ngram_size, out);
  if (cur_len < s.min_length) out.push_back(s.eos);  // MinLengthLogitsProcessor
  return out;
}

std::vector<std::pair<float, int32_t>> TransformersSearch::candidates(
    const Sentence& s, const Ids& seq, const float* vals, const int32_t* ids, int64_t k,
    int64_t keep, float eos_lp) const {
  const int64_t cur_len = static_cast<int64_t>(seq.size());
  // ForcedEOSTokenLogitsProcessor runs after ForcedBOS: at max_length - 1 it wins.
  if (o_.forced_eos_id >= 0 && cur_len == s.max_length - 1)
    return {{0.0f, static_cast<int32_t>(o_.forced_eos_id)}};
  if (o_.forced_bos_id >= 0 && cur_len == 1)
    return {{0.0f, static_cast<int32_t>(o_.forced_bos_id)}};
  const std::vector<int32_t> ban = banned(s, seq);
  // CTranslate2's min length (renormalize_min_length): EOS leaves the softmax while it is
  // banned, so the others' log-probabilities are over the allowed tokens: log p - log(1 - p_eos).
  const float shift = o_.renormalize_min_length && cur_len < s.min_length && !std::isnan(eos_lp)
                          ? -std::log1p(-std::exp(eos_lp))
                          : 0.0f;
  std::vector<std::pair<float, int32_t>> out;
  for (int64_t i = 0; i < k && static_cast<int64_t>(out.size()) < keep; ++i) {
    if (vals[i] == detail::kNegInf) break;
    if (std::find(ban.begin(), ban.end(), ids[i]) == ban.end())
      out.emplace_back(vals[i] + shift, ids[i]);
  }
  TFM_CHECK(!out.empty()) << "search: every token is banned at step " << cur_len
                          << " (bad_words_ids, no_repeat_ngram_size and min_length leave none)";
  return out;
}

void TransformersSearch::greedy_step(Sentence& s, const std::vector<std::pair<float, int32_t>>& row,
                                     int64_t cur_len, const float* attn, uint64_t id) const {
  Beam& b = s.live[0];
  const auto [lp, token] = row[0];
  b.score += lp;
  const bool eos = token == s.eos;
  // The step callback sees the generated tokens only: the prompt is read unscored. Its steps
  // count the hypothesis' tokens before this one (the prompt's part of the output included).
  const auto shown = static_cast<int64_t>(s.prompt.size()) - s.output_from;
  const bool stop = detail::report_step(
      o_, {id, shown + std::ssize(b.tokens), token, lp, false, eos || cur_len + 1 >= s.max_length});
  if (!eos) {
    b.tokens.push_back(token);
    if (attn) b.attention.insert(b.attention.end(), attn, attn + s.width);
  }
  if (eos || stop || cur_len + 1 >= s.max_length) {
    s.finished.push_back({b.tokens, b.score, b.score, eos, b.attention});
    s.done = true;
  }
}

void TransformersSearch::beam_step(Sentence& s,
                                   std::vector<std::vector<std::pair<float, int32_t>>>& rows,
                                   int64_t cur_len, int64_t first_row, const float* attn,
                                   int64_t stride, std::vector<int64_t>& parents) const {
  const int64_t beam = o_.beam_size;
  std::vector<Candidate> cands;
  for (size_t j = 0; j < s.live.size(); ++j)
    for (const auto& [lp, token] : rows[j])
      cands.push_back({s.live[j].score + lp, static_cast<int64_t>(j), token});
  // torch.topk over (beam, token) flattened: best first, ties in index order.
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    if (a.value != b.value) return a.value > b.value;
    return a.beam != b.beam ? a.beam < b.beam : a.token < b.token;
  });
  if (static_cast<int64_t>(cands.size()) > 2 * beam) cands.resize(2 * beam);
  const bool at_max = cur_len + 1 >= s.max_length;
  auto extended = [&](const Candidate& c, bool keep_token) {
    Beam b{s.live[c.beam].tokens, c.value, s.live[c.beam].attention};
    if (keep_token) {
      b.tokens.push_back(c.token);
      if (attn) {
        const float* a = attn + (first_row + c.beam) * stride;
        b.attention.insert(b.attention.end(), a, a + s.width);
      }
    }
    return b;
  };
  // _update_finished_beams: among the best `beam` candidates, those that stop (EOS, or the max
  // length) join the finished list, unless the sentence is frozen (full under early_stopping
  // true, or the heuristic said no improvement is possible).
  const bool full = o_.early_stopping == EarlyStopping::finished &&
                    static_cast<int64_t>(s.finished.size()) == beam;
  if (s.heuristic_open && !full) {
    const double len = static_cast<double>(cur_len + 1 - static_cast<int64_t>(s.prompt.size()));
    const float norm = static_cast<float>(std::pow(len, o_.length_penalty));
    std::vector<Finished> merged = s.finished;
    for (int64_t i = 0; i < std::min<int64_t>(beam, static_cast<int64_t>(cands.size())); ++i) {
      const Candidate& c = cands[i];
      const bool eos = c.token == s.eos;
      if (!eos && !at_max) continue;
      Beam b = extended(c, !eos);
      merged.push_back({std::move(b.tokens), c.value / norm, c.value, eos, std::move(b.attention)});
    }
    std::stable_sort(merged.begin(), merged.end(),
                     [](const Finished& a, const Finished& b) { return a.score > b.score; });
    if (static_cast<int64_t>(merged.size()) > beam) merged.resize(beam);
    s.finished = std::move(merged);
  }
  // _get_running_beams_for_next_iteration: the best `beam` candidates that did not stop.
  std::vector<Beam> next;
  if (!at_max)
    for (const Candidate& c : cands) {
      if (c.token == s.eos) continue;
      next.push_back(extended(c, true));
      parents.push_back(first_row + c.beam);
      if (static_cast<int64_t>(next.size()) == beam) break;
    }
  s.live = std::move(next);
  // _check_early_stop_heuristic, at cur_len + 1.
  if (static_cast<int64_t>(s.finished.size()) == beam) {
    const int64_t gen = o_.early_stopping == EarlyStopping::never && o_.length_penalty > 0
                            ? s.max_length - static_cast<int64_t>(s.prompt.size())
                            : cur_len + 1 - static_cast<int64_t>(s.prompt.size());
    const float best = s.live.empty()
                           ? detail::kNegInf
                           : s.live[0].score / static_cast<float>(std::pow(static_cast<double>(gen),
                                                                           o_.length_penalty));
    s.heuristic_open = s.heuristic_open && best > s.finished.back().score;
  }
  const bool frozen = !s.heuristic_open || (o_.early_stopping == EarlyStopping::finished &&
                                            static_cast<int64_t>(s.finished.size()) == beam);
  s.done = frozen || at_max || s.live.empty();
  if (s.done) parents.resize(parents.size() - s.live.size());
}

Sentence TransformersSearch::make_sentence(const ModelConfig& c, const Ids& source,
                                           const Ids& prefix) const {
  Sentence s;
  s.eos = static_cast<int32_t>(c.eos_id);
  // D: the start token and the prefix; a decoder-only prompt starts the decoder itself.
  if (c.has_encoder() || prefix.empty())
    s.prompt.push_back(
        static_cast<int32_t>(o_.decoder_start_id >= 0 ? o_.decoder_start_id : c.bos_id));
  s.output_from = static_cast<int64_t>(s.prompt.size());
  s.prompt.insert(s.prompt.end(), prefix.begin(), prefix.end());
  // A decoder-only prompt that starts with BOS (CTranslate2's start token): read, not output.
  if (!c.has_encoder() && !prefix.empty() && prefix[0] == c.bos_id) s.output_from = 1;
  // tfm's max_length and min_length count an encoder-decoder model's output (not its start
  // token), and a decoder-only model's prompt (BOS standing in for an empty one): what
  // generate()'s count less the start token, and exactly generate()'s input_ids.
  const int64_t start = c.has_encoder() ? 1 : 0;
  const int64_t d = static_cast<int64_t>(s.prompt.size());
  s.max_length = o_.max_length + start;
  if (o_.max_new_tokens > 0) s.max_length = std::min(s.max_length, d + o_.max_new_tokens);
  // The decoder reads positions 0 … max_length - 2: at most the model's positions; and at
  // least one token follows the prompt (check_inputs left room).
  s.max_length = std::max(std::min(s.max_length, c.max_length + 1), d + 1);
  s.min_length = o_.min_length + start;
  s.width = detail::framed_length(c, static_cast<int64_t>(source.size()));
  s.live.push_back(Beam{});
  return s;
}

Ids TransformersSearch::input_ids(const Sentence& s, const Beam& b) {
  Ids seq = s.prompt;
  seq.insert(seq.end(), b.tokens.begin(), b.tokens.end());
  return seq;
}

int64_t TransformersSearch::top_k_width(const std::vector<Sentence>& sent,
                                        const std::vector<size_t>& active, int64_t t,
                                        int64_t k_base) const {
  int64_t k = k_base;
  for (size_t si : active) {
    const Sentence& s = sent[si];
    if (t + 1 < static_cast<int64_t>(s.prompt.size())) continue;
    for (const Beam& b : s.live)
      k = std::max<int64_t>(k, k_base + static_cast<int64_t>(banned(s, input_ids(s, b)).size()));
  }
  return k;
}

bool TransformersSearch::advance(Sentence& s, int64_t t, int64_t r, const StepView& v,
                                 std::vector<int64_t>& parents, std::vector<int32_t>& next_tokens,
                                 uint64_t id) const {
  const int64_t plen = static_cast<int64_t>(s.prompt.size());
  if (t + 1 < plen) {  // still reading the prompt: its next token is forced, unscored
    if (v.attn && t + 1 >= s.output_from)
      s.prompt_attention.insert(s.prompt_attention.end(), v.attn + r * v.stride,
                                v.attn + r * v.stride + s.width);
    parents.push_back(r);
    next_tokens.push_back(s.prompt[static_cast<size_t>(t + 1)]);
    return true;
  }
  if (t + 1 == plen && v.attn)
    for (Beam& b : s.live) b.attention = s.prompt_attention;
  const int64_t cur_len = t + 1;
  std::vector<std::vector<std::pair<float, int32_t>>> rows;
  for (int64_t j = 0; j < static_cast<int64_t>(s.live.size()); ++j) {
    const size_t at = static_cast<size_t>((r + j) * v.k);
    const float eos_lp = v.eos_log_probs ? v.eos_log_probs[r + j] : std::nanf("");
    rows.push_back(
        candidates(s, input_ids(s, s.live[j]), v.vals + at, v.ids + at, v.k, v.keep, eos_lp));
  }
  if (o_.beam_size == 1) {
    greedy_step(s, rows[0], cur_len, v.attn ? v.attn + r * v.stride : nullptr, id);
    if (!s.done) parents.push_back(r);
  } else {
    beam_step(s, rows, cur_len, r, v.attn, v.stride, parents);
  }
  if (s.done) return false;
  for (const Beam& b : s.live) next_tokens.push_back(b.tokens.back());
  return true;
}

NBest TransformersSearch::results(Sentence& s) const {
  const Ids prefix(s.prompt.begin() + s.output_from, s.prompt.end());
  NBest nb;
  for (Finished& f : s.finished) {
    if (static_cast<int64_t>(nb.size()) == o_.n_best) break;
    Hypothesis h;
    h.tokens = prefix;
    h.tokens.insert(h.tokens.end(), f.tokens.begin(), f.tokens.end());
    h.eos = f.eos;
    h.score = f.score;
    h.log_prob = f.sum;
    h.attention = std::move(f.attention);
    nb.push_back(std::move(h));
  }
  return nb;
}

std::vector<NBest> TransformersSearch::run(const Transformer& model,
                                           const std::vector<Ids>& sources,
                                           const std::vector<uint64_t>& keys,
                                           const std::vector<Ids>& prefixes) const {
  profile::Scope scope(profile::Phase::search);
  detail::check_inputs(model, sources, o_, prefixes);
  const ModelConfig& c = model.config();
  NoGradGuard no_grad;
  std::vector<NBest> out(sources.size());
  if (sources.empty()) return out;
  std::vector<Sentence> sent;
  std::vector<const Ids*> ptrs;
  int64_t longest = 1;
  std::vector<int32_t> tokens;
  for (size_t i = 0; i < sources.size(); ++i) {
    sent.push_back(make_sentence(c, sources[i], detail::prefix_of(prefixes, i)));
    longest = std::max(longest, sent.back().max_length);
    ptrs.push_back(&sources[i]);
    tokens.push_back(sent.back().prompt[0]);
  }
  DecoderState state = detail::start(model, ptrs, longest);
  std::vector<size_t> active(sources.size());
  for (size_t i = 0; i < active.size(); ++i) active[i] = i;
  const SpecialIds specials = detail::special_ids(c, o_);
  const int64_t k_base = o_.beam_size == 1 ? 1 : 2 * o_.beam_size;
  // Greedy search without scores ranks the logits: its sums are no log-probabilities.
  const bool unscored = unscored_greedy(o_);
  for (int64_t t = 0; !active.empty(); ++t) {
    Tensor attn;  // (rows, S)
    const Tensor logits =
        detail::step_logits(model, state, tokens, o_.return_attention ? &attn : nullptr);
    const int64_t rows_now = logits.size(0);
    // Enough per row to keep k_base after the bans: top-k of the raw log-probs, bans dropped.
    const int64_t k = std::min(top_k_width(sent, active, t, k_base), logits.size(1));
    profile::Scope top(profile::Phase::top_k);
    const std::vector<StepRule> keep(static_cast<size_t>(rows_now), StepRule::keep);
    const TopK best = unscored ? top_k_logits(logits, keep, specials, k)  // the same order
                               : top_k_log_probs(logits, keep, specials, k);
    const HostView<float> vals = to_host<float>(best.values);  // (rows, k)
    const HostView<int32_t> ids = to_host<int32_t>(best.ids);
    top.end();
    const HostView<float> attn_h = to_host<float>(attn);
    const HostView<float> eos_h = o_.renormalize_min_length && !unscored  // a row's constant
                                      ? to_host<float>(eos_log_probs(logits, c.eos_id))
                                      : HostView<float>{};
    const StepView view{vals.data(),
                        ids.data(),
                        k,
                        k_base,
                        o_.return_attention ? attn_h.data() : nullptr,
                        o_.return_attention ? attn.size(1) : 0,
                        o_.renormalize_min_length && !unscored ? eos_h.data() : nullptr};
    std::vector<int64_t> parents;
    std::vector<int32_t> next_tokens;
    std::vector<size_t> still;
    int64_t r = 0;
    for (size_t si : active) {
      const int64_t n = static_cast<int64_t>(sent[si].live.size());
      const uint64_t id = keys.empty() ? si : keys[si];  // (ids: the step's top-k)
      if (advance(sent[si], t, r, view, parents, next_tokens, id)) still.push_back(si);
      r += n;
    }
    active = std::move(still);
    if (active.empty()) break;
    detail::reorder(state, parents);
    tokens = std::move(next_tokens);
  }
  for (size_t i = 0; i < sent.size(); ++i) out[i] = results(sent[i]);
  return out;
}

}  // namespace

std::unique_ptr<Search> make_transformers_search(const SearchOptions& o) {
  TFM_CHECK(!o.sampling) << "search: the transformers rule decodes greedily or by beam search";
  return std::make_unique<TransformersSearch>(o);
}

}  // namespace tfm::decode
