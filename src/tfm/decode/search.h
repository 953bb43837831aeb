// Search over the incremental decoder: greedy, beam and sampling behind one interface.
//
// Conventions. A hypothesis holds the generated tokens without BOS/EOS. Its length for the length
// penalty counts the EOS (tokens + 1), so an empty output has length 1. log_prob is the model's
// log P(tokens + EOS | source) exactly as score_pairs computes it (the masks below only forbid
// tokens, they never renormalise). PAD and BOS are never generated; EOS is forbidden before
// min_length tokens and forced once max length - 1 tokens exist, so every output ends with EOS and
// has at most max length tokens including it.
//
// Target prefixes. A sentence's prefix is forced: its first steps take the prefix tokens instead
// of choosing (every beam shares them: the beam holds one hypothesis until the prefix is
// consumed), then the search goes on freely. The hypothesis includes the prefix, its log_prob the
// prefix tokens' log-probabilities (so it stays score_pairs' score of the whole hypothesis), and
// its length, for the length penalty and the limits, counts them: the max length is raised to
// prefix + 1 when the source's would leave no room for EOS after the prefix.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "tfm/data/batch.h"
#include "tfm/model/generation_config.h"
#include "tfm/model/transformer.h"

namespace tfm::decode {

// How a search ranks hypotheses and when it stops.
//  - tfm: the conventions above; the score is log_prob under length_penalty (GNMT) or normalize,
//    a sentence stops once no live hypothesis can beat its n_best-th finished one, and the max
//    length (max_length_a · source + max_length_b, capped) forces EOS at the last position.
//  - transformers: Hugging Face generate()'s, for converted models (docs/convert.md): greedy is
//    the argmax; beam search keeps 2·beam candidates a step, finishes EOS candidates among the
//    best beam, scores log_prob / generated length^length_penalty, stops by early_stopping
//    (false: generate's heuristic, true: once beam hypotheses are finished, never: the exact
//    bound), and a hypothesis that reaches the max length without EOS is finished as it is.
//    Nothing is masked but what the generation config bans (bad_words_ids, no_repeat_ngram_size,
//    EOS before min_length) or forces (forced_bos_id first, forced_eos_id last, each at log-prob
//    0); a prefix (a decoder-only model's prompt) is the decoder's prompt, outside the score and
//    the generated length; log_prob is the sum of the generated tokens' (masked) log-probs and
//    score generate's sequences_scores. max_length_a and max_length_b are not used.
enum class SearchRule : uint8_t { tfm, transformers };

// One token greedy search or sampling chose (SearchOptions::on_step).
struct Step {
  uint64_t id = 0;   // the sentence's id (Search::run's ids; its index in `sources` if none)
  int64_t step = 0;  // the sentence's tokens before this one, its prefix counted
  int32_t token = 0;
  double log_prob = 0;     // what the hypothesis' log_prob adds for it
  bool in_prefix = false;  // forced by the sentence's prefix
  bool is_last = false;    // an end token, or the last token the max length allows
};
// Returns true to end the sentence at this token (a hypothesis without an end token).
using StepCallback = std::function<bool(const Step&)>;

struct SearchOptions {
  int64_t beam_size = 1;
  int64_t n_best = 1;           // hypotheses returned per sentence (<= beam_size for beam)
  double length_penalty = 0.0;  // α; 0: raw sum of log-probs
  // false: score / ((5 + len) / 6)^α (GNMT); true: score / len^α (CTranslate2's).
  bool power_penalty = false;
  bool normalize = false;      // plain length normalisation score / len (overrides α)
  double max_length_a = 2.0;   // max target length (with EOS) = a · src_len + b, capped by
  double max_length_b = 10.0;  // max_length and the model's positions
  int64_t max_length = 1024;
  int64_t max_new_tokens = 0;  // > 0: at most this many tokens after the prefix (EOS counted)
  int64_t min_length = 0;      // tokens (without EOS) before EOS is allowed
  // While EOS is forbidden (min_length), renormalise the other tokens' log-probabilities over the
  // allowed ones (CTranslate2); otherwise masks never renormalise (the conventions above).
  bool renormalize_min_length = false;
  // > 0: CTranslate2's beam search (beam.cpp, can_stop): EOS finishes only among a step's
  // beam_size best candidates, and round(beam_size * patience) finished hypotheses (with
  // length_penalty 0: the best candidate once EOS, and n_best finished) stop a sentence.
  double patience = 0.0;
  // Whether Hypothesis::score counts a target prefix's log-probabilities; log_prob always does.
  bool score_prefix = true;
  // Sequences whose last token a row may not take when its tokens end with the others
  // (detail::process_logits; removed before the softmax).
  std::vector<Ids> suppress_sequences;
  // CTranslate2's repetition penalty (Keskar et al. 2019), the tfm rule: before the softmax, the
  // logit l of each token a row holds already (its prefix included) becomes l / p when l > 0,
  // l * p otherwise. 1: none.
  double repetition_penalty = 1.0;
  // > 0: a row may not take the token that would repeat an n-gram of its tokens (both rules: the
  // tfm rule's tokens are the hypothesis' with its prefix, removed before the softmax as
  // CTranslate2 does; the transformers rule's are generate()'s input_ids).
  int64_t no_repeat_ngram_size = 0;
  // The tokens that end a hypothesis (CTranslate2's end_token), the tfm rule; empty: the model's
  // EOS. The first takes EOS's part in the conventions (forbidden before min_length, forced at the
  // last position); the others end a hypothesis wherever the search takes them, and are forbidden
  // before min_length too. The model's EOS, when not listed, is an ordinary token.
  Ids end_ids;
  bool early_stop = true;  // stop a sentence once no live hypothesis can beat the finished
  // Sampling (beam_size must be 1): temperature, then top-k (0: all), then top-p (nucleus).
  bool sampling = false;
  double temperature = 1.0;  // <= 0 or top_k == 1: argmax
  int64_t top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 0;
  // CTranslate2's coverage penalty β (Wu et al. 2016), greedy and beam search: a finished
  // hypothesis' score gains β · Σ over the source positions it attends at all of
  // log(min(attention summed over its rows, 1)), the end token's row counted. 0: none.
  double coverage_penalty = 0.0;
  // CTranslate2's last step, the tfm rule: a hypothesis that reaches the max length - 1 tokens
  // without an end token ends there (Hypothesis::eos false; scored over its tokens, without the
  // end token), where tfm's rule would force EOS at the max length; beam search finishes the
  // beam's best candidates of that step, end tokens or not.
  bool cut_at_max_length = false;
  // Fill Hypothesis::attention.
  bool return_attention = false;
  // Fill Hypothesis::logits (CTranslate2's return_logits_vocab; the tfm rule's greedy, beam and
  // sampling searches).
  bool return_logits = false;
  // > 0 (and < 1): CTranslate2's soft prefix bias (prefix_bias_beta; Arivazhagan et al. 2020,
  // section 4.2), greedy and beam search of the tfm rule. The prefixes are not forced: while a
  // beam slot has followed its sentence's prefix (CTranslate2 tracks the slot, not the
  // hypothesis' parent), the step's distribution becomes (1 - β)·p + β·onehot(prefix token), and
  // the beam ranks and scores by these biased log-probabilities; an end token may finish a
  // hypothesis anywhere. Hypothesis::log_prob stays the model's own log-probability.
  double prefix_bias = 0.0;
  // CTranslate2's return_alternatives (the tfm rule; make_alternatives): n_best alternatives at
  // the first position after each sentence's prefix, each then continued by this search with
  // beam_size; an alternative whose probability is below min_alternative_prob is not expanded.
  // Within the continuations (the inner search) it says that the prefixes end with an
  // alternative: CTranslate2 continues those by a new search without a prefix, so its rule for
  // the first step after a prefix (beam.cpp) does not apply, and a hypothesis' score is its
  // log-probability after the prefix over its length after the prefix (with EOS).
  bool alternatives = false;
  double min_alternative_prob = 0.0;
  // make_search splits the sentences into shards of this many (0: one batch) and decodes the
  // shards in parallel, one thread each with its own batch, instead of splitting every small
  // op of every step over the threads: one OpenMP region per search instead of dozens per step.
  // kAutoShard (the default): shard_sentences' rule, by the call's sentence count. Either way the
  // shards depend only on the sentence order, never on the thread count (a row's logits depend in
  // the last bits on the rows beside it: tests/decode/test_search.cpp, SearchDeterminism).
  static constexpr int64_t kAutoShard = -1;
  int64_t shard_size = kAutoShard;
  SearchRule rule = SearchRule::tfm;
  // The transformers rule's generate() settings (the tfm rule ignores them).
  EarlyStopping early_stopping = EarlyStopping::heuristic;
  std::vector<Ids> bad_words_ids;
  int64_t forced_bos_id = -1;     // generate's forced_bos_token_id; -1: none
  int64_t forced_eos_id = -1;     // generate's forced_eos_token_id; -1: none
  int64_t decoder_start_id = -1;  // the decoder's first token (mBART's target language); -1: BOS
  // Called with each token greedy search or sampling (beam_size 1, no alternatives:
  // check_inputs) chooses, as soon as it is chosen, from the thread that searches
  // (a sharded search's shards call it from several threads at once: the caller serialises).
  // Returning true ends the sentence there: its hypothesis keeps the token (an end token
  // excepted) with eos false, scored over its tokens. Greedy search then also ends a sentence at
  // its first end token (the reported tokens are the hypothesis; without a callback, a length
  // penalty may let it continue past it). The transformers rule reads a prompt unscored: it
  // reports the generated tokens only. An exception it throws ends the search. Compared by
  // identity: searches with different callbacks never share a batch.
  std::shared_ptr<const StepCallback> on_step;
  // false: the caller reads no Hypothesis::score or log_prob, so a search whose tokens do not
  // depend on them may skip the log-softmax: greedy search (unscored_greedy, both rules) takes
  // each step's best masked logit, as CTranslate2's greedy search does without return_scores;
  // both then hold the sum of the chosen logits (no log-probability), not finite where a step's
  // row held a NaN or +inf logit, so that an overflow still shows. Other searches compute the
  // scores they rank by.
  bool scores = true;

  bool operator==(const SearchOptions&) const = default;
};

struct Hypothesis {
  Ids tokens;             // without BOS/EOS, starting with the sentence's prefix
  double score = 0.0;     // log_prob under the length-penalty rule; higher is better
  double log_prob = 0.0;  // log P(tokens + EOS | source)
  // With return_attention: row-major (tokens, source positions), row t the last decoder layer's
  // cross-attention, averaged over heads, of the step that produced tokens[t] (the step that
  // produced EOS has none, as in CTranslate2). The source positions are the framed source the
  // encoder reads ([BOS] x [EOS] as the config's source_bos / source_eos say), so a row has
  // source length + source_specials() values and sums to 1. Empty otherwise.
  std::vector<float> attention;
  bool eos = true;      // ended by EOS (false: cut at the max length, the transformers rule)
  int32_t end_id = -1;  // the end token that ended it (SearchOptions::end_ids); -1: the model's EOS
  double prefix_log_prob = 0.0;  // the part of log_prob that the target prefix's tokens took
  // With return_logits: row-major (steps, V), one row per decoder step of the hypothesis (its
  // prefix's and its end token's included): the logits the search chose from, after the logits
  // processors (repetition penalty; n-gram and suppressed sequences disabled) and with the end
  // tokens disabled before min_length, a disabled token at the lowest float (-3.4e38, not -inf),
  // before the log-softmax, PAD and BOS not masked (as CTranslate2's return_logits_vocab gives
  // them). Empty otherwise.
  std::vector<float> logits{};
};

using NBest = std::vector<Hypothesis>;  // best first

class Search {
 public:
  virtual ~Search() = default;
  // sources: token ids without BOS/EOS (the config's source_bos / source_eos frame them), one
  // per sentence (an encoder-decoder model); for a decoder-only model, empty ones, the prompts
  // it continues being the prefixes, and the max length the caps alone (max_target_length). ids: a
  // stable id per sentence (its input line), which keys its random stream when sampling so results
  // do not depend on batching; empty means 0, 1, …. prefixes: per sentence, the target tokens every
  // hypothesis starts with (see above; no PAD, BOS or EOS); empty: none for any sentence.
  virtual std::vector<NBest> run(const Transformer& model, const std::vector<Ids>& sources,
                                 const std::vector<uint64_t>& ids = {},
                                 const std::vector<Ids>& prefixes = {}) const = 0;
  // A search that decodes its sentences in shards, one thread each (make_search with
  // shard_size != 0), says so: the sentences of a shard, and the search that decodes one shard
  // (0 and null otherwise). A caller with many batches (runtime::search_in_batches) then spreads
  // the shards of all its batches over the threads at once, so no thread waits for the slowest
  // shard of each batch; a shard's result is the same either way.
  // sentences: how many the call decodes (shard_sentences).
  virtual int64_t shard_size(int64_t /*sentences*/) const { return 0; }
  virtual const Search* shard_search() const { return nullptr; }
};

// Rows a decoding step multiplies in one shard under kAutoShard, at most and at least (unless the
// call has fewer): the few-row kernels reach their rate from about 64 rows on (tfm bench small
// greedy, 64 sentences, AVX2, 1 thread: shards of 16 sentences 0.494 s, 32 0.425 s, 64 0.382 s),
// and a call of a few dozen sentences still needs shards for its threads (32 sentences on 2
// threads: 2 shards of 16 0.276 s, one batch split op by op over both 0.637 s).
inline constexpr int64_t kShardRows = 64;
inline constexpr int64_t kShardMinRows = 16;
// The threads a call's shards are sized for when it is small: ceil(sentences / kShardSpread) a
// shard, within the rows above. Two, not more: every shard streams every weight each step, so a
// call cut finer than its threads need pays in memory traffic and shorter products (OPUS-MT-shaped
// model, 120 sentences, greedy, AVX2: a quarter's shards 5.85 s at 1 thread and 3.42 s at 2, a
// half's 5.47 and 2.85, the same outputs).
inline constexpr int64_t kShardSpread = 2;

// Sentences a shard when a call decodes `sentences` (options.shard_size when set). kAutoShard:
// ceil(sentences / kShardSpread), within kShardMinRows … kShardRows rows (a sentence has
// beam_size rows), at least one. Not the thread count: see SearchOptions::shard_size.
int64_t shard_sentences(const SearchOptions& options, int64_t sentences);
// Where shard k of `parts` over n sentences begins (k = parts: n): ceil(n / size) parts of
// sizes that differ by at most one, so no thread is left with a remainder (64 sentences in shards
// of at most 30: 21 + 21 + 22, not 30 + 30 + 4).
inline int64_t shard_parts(int64_t n, int64_t size) {
  return (n + size - 1) / size;
}
inline int64_t shard_begin(int64_t n, int64_t parts, int64_t k) {
  return k * n / parts;
}

// Sampling when options.sampling, greedy when beam_size == 1, beam search otherwise; sharded as
// options.shard_size says.
std::unique_ptr<Search> make_search(const SearchOptions& options);
std::unique_ptr<Search> make_greedy(const SearchOptions& options);
// Whether a search with these options is greedy search whose tokens need no log-probabilities:
// scores off, beam 1, no sampling, alternatives, prefix bias or step callback, and a sentence
// ended by the first end token ranked best (the transformers rule; the tfm rule with a patience
// that rounds to 1, or early stopping without a length penalty or normalisation). Its step ranks
// a row's masked logits, which order it as its log-probs do (bar two logits that round to one
// log-probability), as generate()'s greedy search and CTranslate2's without scores rank them.
bool unscored_greedy(const SearchOptions& options);
std::unique_ptr<Search> make_beam(const SearchOptions& options);
std::unique_ptr<Search> make_sampling(const SearchOptions& options);
// CTranslate2's return_alternatives (decoding.cc, decode_alternatives): per sentence, the
// log-softmax at the first position after its prefix, the end tokens removed before it (as
// CTranslate2's one-step expansion does; processors see no history there), PAD/BOS masked;
// its n_best best tokens, in that order, down to the first with probability below
// min_alternative_prob; each continued from prefix + token by the search `options` name
// otherwise (n_best 1). A hypothesis' tokens, log_prob and attention are that search's; its score
// CTranslate2's: the alternative's expansion log-prob plus the continuation's own score (its
// log-prob after the alternative under the length penalty, over its length with EOS).
std::unique_ptr<Search> make_alternatives(const SearchOptions& options);
// The transformers rule's greedy (beam_size 1) and beam search.
std::unique_ptr<Search> make_transformers_search(const SearchOptions& options);

// The search's score of a hypothesis with total log-probability log_prob and length len (with EOS).
double final_score(double log_prob, int64_t len, const SearchOptions& options);
// Max target length (with EOS) for a source of src_len tokens and a prefix of prefix_len: at
// least prefix_len + 1 (check_inputs has made sure the caps allow that) and at least 1. A
// decoder-only model's is the caps (options.max_length and the model's positions). Both are
// also capped at prefix_len + max_new_tokens when that is set.
int64_t max_target_length(const ModelConfig& config, const SearchOptions& options, int64_t src_len,
                          int64_t prefix_len = 0);

}  // namespace tfm::decode
