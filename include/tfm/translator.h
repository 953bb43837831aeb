// tfm::Translator: a model directory loaded once, translating and scoring text or token ids.
//
//   tfm::Translator t("model/", {.compute_type = tfm::ComputeType::automatic});
//   auto results = t.translate_batch({"Ein Hund läuft.", "Zwei Katzen."},
//                                    {.search = tfm::Search::beam, .beam_size = 4});
//   std::cout << results[0].hypotheses[0].text << "\n";
//
// The translator owns everything between text and the search: SentencePiece tokenisation, the
// model's source framing, truncation to the model's positions, sorting by length and cutting
// into batches (max_batch_size sentences, max_batch_tokens padded tokens), and restoring input
// order. The ids of the results do not depend on the batching or the thread counts (the scores
// are equal to float precision; the same batches give the same bits).
//
// Every search goes through the translator's request queue, as CTranslate2's translate_batch_async
// and replica pool do: the *_async methods return at once with an AsyncResults, the others wait
// for theirs. Dispatcher threads (inter_threads of them) form the batches, from one call's
// sentences (Batching::own, the default: the batches a synchronous call has always had) or from
// every caller's at once (Batching::shared: a server's requests, which wait up to
// max_batch_delay_ms for others to share a batch with).
//
// Thread safety: every method is const and may be called from several threads at once; all
// callers share the one copy of the weights. inter_threads > 1 also runs the batches of one call
// in parallel, each worker with intra_threads threads of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "tfm/error.h"
#include "tfm/model_info.h"
#include "tfm/types.h"

namespace tfm {

// What one pass of the queue decoded (TranslatorOptions::on_batch).
struct BatchStats {
  size_t sentences = 0;
  int64_t source_tokens = 0;  // the prompts' for a decoder-only model
  int64_t target_tokens = 0;  // of the best hypotheses
  double seconds = 0.0;
};

struct TranslatorOptions {
  // cpu, or cuda in a build with the CUDA backend on a machine with a GPU: the model's weights on
  // the device (f32, or prepared there for bf16 / int8), inter_threads 1.
  Device device = Device::cpu;
  // Resolved once, at load: automatic is bf16 on cuda and where the CPU multiplies bf16, else
  // fp32.
  ComputeType compute_type = ComputeType::float32;
  int intra_threads = 0;        // threads of each batch's ops; 0: all cores / inter_threads
  int inter_threads = 1;        // batches translated at once, sharing the weights
  int64_t max_batch_size = 32;  // sentences a batch
  // Padded source tokens a batch; 0: no limit. For Batching::shared, also how many source tokens
  // waiting make a batch ready (0: max_batch_size sentences do).
  int64_t max_batch_tokens = 0;
  // How long a shared request's sentences wait for others to batch with (0: not at all).
  int64_t max_batch_delay_ms = 0;
  // Asynchronous calls admitted at once (queued or being decoded); one more is a tfm::QueueFull.
  // 0: no limit. Synchronous calls are never refused.
  int64_t max_queued_requests = 0;
  // Called after each pass of the queue's dispatchers over a group of requests (a batch, or the
  // batches of one or more calls decoded together), on the thread that ran it (a server's
  // metrics). Empty: nothing.
  std::function<void(const BatchStats&)> on_batch;
};

// The queue now: sentences waiting for a batch, and asynchronous calls admitted (waiting or being
// decoded).
struct QueueStats {
  size_t queued_sentences = 0;
  size_t admitted_requests = 0;
};

// With whom an asynchronous call's sources share batches.
// - own: only each other, sorted and cut as translate_batch does: its results, bit for bit.
// - shared: any caller's sources queued with equal search options, sorted and cut together (a
//   server's requests): fuller batches; the ids are those of any batching, the scores equal to
//   float precision. A sampling call is batched as own (its random streams are keyed by each
//   source's place in the call).
enum class Batching : uint8_t { own, shared };

// Every TranslatorOptions value in range and the device and compute type available here, named
// through `name`; a tfm::InvalidArgument names the first problem. The Translator runs it at load.
void validate_translator_options(const TranslatorOptions& options,
                                 const OptionSpeller& name = field_name);

// One token a search chose, reported to TranslationOptions::step_callback as soon as it is
// chosen (CTranslate2's GenerationStepResult).
struct StepResult {
  // The sentence's index in the call (translate_batch's sources, generate_batch's prompts; a
  // stream's line, from 0), whatever batches, shards or threads decoded it.
  size_t index = 0;
  // The tokens of the sentence before this one, its target prefix (a decoder-only model's
  // prompt, without BOS) counted: 0 is the first token after BOS.
  int64_t step = 0;
  int64_t token_id = 0;
  std::string token;  // the target vocabulary's piece; "" when the model has none
  // Its log-probability as the search took it (after the logits processors and, with
  // renormalize_min_length, renormalised): what the hypothesis' log_prob adds for it.
  double log_prob = 0.0;
  bool in_prefix = false;  // forced by the target prefix (the prompt), not chosen
  // The sentence's last token: an end token, or the last one the max length allows.
  bool is_last = false;
};
// Returns true to end the sentence at this token: its hypothesis ends there, without an end
// token (as one cut at the max length does), and the search goes on with the others.
using StepCallback = std::function<bool(const StepResult&)>;

// How length_penalty (α) turns a hypothesis' log-probability into its ranking score.
// - gnmt: log P / ((5 + len) / 6)^α, len the tokens with EOS (Wu et al. 2016; tfm's default).
// - power: log P / len^α, len the tokens with EOS (CTranslate2's rule).
enum class LengthPenalty : uint8_t { gnmt, power };
const char* length_penalty_name(LengthPenalty p);  // "gnmt" | "power"
// "gnmt" | "power"; anything else is a tfm::InvalidArgument naming the choices.
LengthPenalty parse_length_penalty(std::string_view name);

// One call's search. validate_translation_options says what each value may be; every method
// that takes these options checks them there first (tfm::InvalidArgument).
//
// A model converted from Transformers (ModelInfo::search_rule "transformers") decodes by
// generate()'s rules (docs/convert.md): length_penalty is generate()'s exponent (score =
// log-probs / length^alpha, alpha may be negative), max_length_factor/extra, normalize_scores
// and sampling do not apply, and score/log_prob are generate()'s. Translator::default_options()
// gives its generation config's settings.
struct TranslationOptions {
  // Whose rules decode: "" or "model", the model's (a converted model: generate()'s, see above;
  // tfm's otherwise); "tfm", tfm's on any model, so CTranslate2's with its options: what
  // tfm.ctranslate2 asks for, so that a CTranslate2 program decodes a model converted from
  // Transformers as CTranslate2 decodes its own conversion of it. A converted model then ignores
  // its generation config (as CTranslate2 does) but for the start token; a Marian model's PAD is
  // removed before the softmax (CTranslate2's converter drops it from the vocabulary).
  std::string search_rule{};
  // greedy, beam (beam_size wide) or sampling (sampling_*); search_for(beam_size, sampling)
  // reads the usual spellings.
  Search search = Search::greedy;
  int64_t beam_size = 1;        // the beam's width; greedy search and sampling keep 1
  int64_t num_hypotheses = 1;   // returned per sentence; at most beam_size
  double length_penalty = 0.0;  // alpha (length_penalty_form); 0: the raw sum of log-probs
  LengthPenalty length_penalty_form = LengthPenalty::gnmt;
  bool normalize_scores = false;  // rank by log-probability / length instead
  // Max output length (tokens with EOS) = max_length_factor * source length + max_length_extra,
  // capped by max_decoding_length and by the model's positions.
  double max_length_factor = 2.0;
  int64_t max_length_extra = 10;
  int64_t max_decoding_length = 1024;
  // Generated tokens after the target prefix (a decoder-only model's prompt), EOS counted: a cap
  // besides max_decoding_length; 0: none. generate()'s max_new_tokens.
  int64_t max_new_tokens = 0;
  int64_t min_decoding_length = 0;  // tokens before EOS is allowed
  // EOS, forbidden before min_decoding_length, leaves the softmax (CTranslate2's way): the other
  // tokens' log-probabilities are renormalised over the allowed ones at those steps, so log_prob
  // is no longer score_batch's teacher-forced score. Greedy and beam search.
  bool renormalize_min_length = false;
  // 0: tfm's beam search, which stops a sentence once no live hypothesis can beat its
  // num_hypotheses-th finished one. > 0: CTranslate2's, with this patience factor: EOS
  // candidates finish only among a step's beam_size best, and a sentence stops once
  // round(beam_size * patience) hypotheses have finished (with length_penalty 0: once a step's
  // best candidate was EOS and num_hypotheses have). Greedy and beam search.
  double patience = 0.0;
  // Whether the scores (the ranking) count a target prefix's log-probabilities (tfm) or start
  // after it (false: CTranslate2's); log_prob always counts them.
  bool score_prefix = true;
  // Target id sequences never generated (CTranslate2's suppress_sequences; its disable_unk is
  // {{unk}}): a one-token sequence's token is removed from every step's softmax, a longer one's
  // last token wherever a hypothesis (its prefix included) ends with the others. Removed before
  // the softmax, as CTranslate2 does, so the other tokens' log-probabilities are renormalised
  // and log_prob is no longer score_batch's score at those steps.
  std::vector<std::vector<int64_t>> suppress_sequences{};
  // CTranslate2's repetition penalty: before the softmax, the logit l of each token a hypothesis
  // holds already (its target prefix included) becomes l / p when l > 0, l * p otherwise; 1: none.
  // Like suppress_sequences it renormalises, so log_prob is no longer score_batch's score.
  double repetition_penalty = 1.0;
  // > 0: no hypothesis repeats an n-gram of this size (CTranslate2's no_repeat_ngram_size, and
  // generate()'s for a converted model); the token that would is removed before the softmax.
  // -1: the model's own (a converted model's generation config; 0 otherwise).
  int64_t no_repeat_ngram_size = -1;
  // The target ids that end a hypothesis (CTranslate2's end_token); empty: the model's EOS. The
  // search stops at any of them; the model's EOS, when not listed, is an ordinary token. The
  // first takes EOS's part in the length rules (forbidden before min_decoding_length, forced at
  // the max length); the others are forbidden before min_decoding_length too. The ids exclude
  // the end token, which return_end_token appends.
  std::vector<int64_t> end_token{};
  // CTranslate2's return_alternatives: num_hypotheses alternatives at the first position after
  // the target prefix (the most likely tokens there, best first, end tokens excluded), each
  // continued by the search the other options describe; num_hypotheses may exceed beam_size.
  // An alternative whose probability is below min_alternative_expansion_prob, and those after
  // it, are dropped. The hypotheses stay in the alternatives' order; each score is CTranslate2's:
  // the alternative's log-probability plus its continuation's own score (over the length after
  // the alternative). Not for a converted model.
  bool return_alternatives = false;
  double min_alternative_expansion_prob = 0.0;
  // Source positions kept, the model's framing counted (CTranslate2's max_input_length): a longer
  // source is cut as one longer than the model's positions is, its framing's end kept. 0: the
  // model's positions alone.
  int64_t max_input_length = 0;
  // Each hypothesis' ids end with the end token that ended it (the text is unchanged: EOS has no
  // text), as CTranslate2's return_end_token; one cut at the max length has none.
  bool return_end_token = false;
  // At the max length: true, the last position takes the end token (tfm's rule, so every
  // hypothesis ends with it); false (CTranslate2's), a hypothesis that reaches the max length
  // less one without an end token ends there, its score and log_prob without one, and beam
  // search finishes the beam's best candidates of that step. Greedy, beam and sampling; not for
  // a converted model decoded by generate()'s rules (which cut there too).
  bool force_end_token = true;
  // CTranslate2's coverage penalty β (greedy and beam search; >= 0): a hypothesis' score gains
  // β · Σ over the source positions of log(min(the attention it paid them, summed over its
  // tokens and the end token, 1)), the attention being return_attention's. 0: none.
  double coverage_penalty = 0.0;
  // Search::sampling draws from the distribution after the temperature, then the top k (0: all),
  // then the nucleus of mass p.
  double sampling_temperature = 1.0;
  int64_t sampling_topk = 0;
  double sampling_topp = 1.0;
  uint64_t seed = 0;  // with a sentence's index in the call, keys its random stream
  // Fill TranslationHypothesis::attention (translate_stream, which writes text, ignores it).
  bool return_attention = false;
  // TranslationHypothesis::score and log_prob as the search computes them, or NaN (false:
  // CTranslate2's return_scores=False). Without them greedy search (beam_size 1, no
  // prefix_bias_beta or step_callback; by tfm's rules length_penalty 0 without normalize_scores,
  // or a patience that rounds to 1; any by generate()'s) picks each token from the logits without
  // their log-softmax, as CTranslate2's does: the tokens it picks with scores, bar two logits
  // that round to one log-probability. translate_stream computes them for n_best lines alone,
  // whatever this says.
  bool return_scores = true;
  // Fill TranslationHypothesis::logits (CTranslate2's return_logits_vocab): greedy, beam and
  // sampling; not with return_alternatives, nor for a converted model decoded by generate()'s
  // rules (search_rule "tfm" decodes it by CTranslate2's).
  bool return_logits_vocab = false;
  // CTranslate2's replace_unknowns: each hypothesis id that is the target vocabulary's unknown
  // token gets the source position it attends most (TranslationHypothesis::unknown_sources), whose
  // token replaces it where a front end deals in tokens (the Python package's token lists). The
  // search keeps the attention for it (returned only with return_attention). Not for a
  // decoder-only model, a converted model decoded by generate()'s rules, or the text methods
  // (tokens replace tokens: give ids, or token lists in Python).
  bool replace_unknowns = false;
  // CTranslate2's prefix_bias_beta β in [0, 1): > 0 makes the target prefixes soft (Arivazhagan
  // et al. 2020, section 4.2) instead of forced: while a beam slot follows its sentence's prefix,
  // the step's distribution becomes (1 - β)·p + β·onehot(the prefix token), and the beam ranks
  // and scores (score) by these biased log-probabilities; log_prob stays the model's own. The
  // search is a beam search (beam_size 1 included); not with sampling, return_alternatives, a
  // decoder-only model (its prompt is no prefix to bias towards) or a converted model decoded
  // by generate()'s rules. Without a target prefix it changes nothing.
  double prefix_bias_beta = 0.0;
  // Attention rows over the framed source (tfm: BOS/EOS columns as ModelInfo's source_bos /
  // source_eos say), or false: over the source's own tokens, the framing's columns dropped
  // (CTranslate2's; the rows then sum to less than 1).
  bool attention_framing = true;
  // A multilingual converted model (NLLB, M2M100, mBART-50, mBART): the target language, as its
  // tokenizer's code ("eng_Latn", "en", "en_XX"); forced as the first generated token, or as the
  // decoder's start token, as the model's family does. Empty: the model's generation config's.
  std::string target_lang{};
  // The source language, for the text methods (the tokenizer frames the source with its code;
  // token ids already hold it). Empty: the tokenizer's default.
  std::string source_lang{};
  // Called for each token the search chooses, as soon as it has chosen it (CTranslate2's
  // callback): greedy search and sampling only (beam_size 1, not with return_alternatives;
  // tfm::InvalidArgument otherwise). A converted model decoded by generate()'s rules reads its
  // prompt (target prefix) unscored: only the tokens after it are reported. Calls come from the
  // threads that decode (a dispatcher's or a worker's, never the caller's), one at a time (a mutex
  // serialises them, so a callback needs no lock of its own), each sentence's in order. Returning
  // true ends that sentence there (StepResult). With a callback, greedy search ends a sentence at
  // its first end token, so the reported tokens are the hypothesis (without one, tfm's beam-1
  // search under a length penalty may continue past it). A call with a callback shares no batch
  // with another call. An exception it throws ends the call's search and is rethrown to the caller
  // (AsyncResults::get or the synchronous method); once a call is cancelled, it is not called
  // again. Empty: none.
  StepCallback step_callback{};
};

// Caps a service puts on what its clients may ask, below the model's own limits (0: none).
struct TranslationLimits {
  int64_t max_beam_size = 0;
};

// Every TranslationOptions value in range and every combination allowed for this model, each
// option named through `name` (so each front end's error names its own spelling of it); a
// tfm::InvalidArgument names the first problem. The one check of these options: the Translator
// runs it on every call, and a front end runs it first with its own speller.
void validate_translation_options(const TranslationOptions& options, const ModelInfo& model,
                                  const OptionSpeller& name = field_name,
                                  const TranslationLimits& limits = {});

struct TranslationHypothesis {
  std::string text;          // detokenised (empty for the id methods)
  std::vector<int64_t> ids;  // target ids, without BOS/EOS; the target prefix first, if any
  double score = 0.0;        // the ranking score (length penalty applied)
  double log_prob = 0.0;     // log P(ids + EOS | source), the prefix's tokens included
  // With return_attention: one row per id, the last decoder layer's cross-attention (averaged
  // over heads) of the step that produced it, as CTranslate2 returns it. A row holds one weight
  // per source position as the model reads the source: its ids (cut to the model's positions)
  // framed as ModelInfo's source_bos / source_eos say (by default the ids then EOS), so
  // source length + 1 values by default; each row sums to 1. Empty otherwise.
  std::vector<std::vector<float>> attention;
  // With return_logits_vocab: one row per decoder step (the target prefix's steps and the end
  // token's included, so ids.size() + 1 rows for a hypothesis ended by its end token without
  // return_end_token), each the target vocabulary's logits the search chose from: after the
  // repetition penalty, with the tokens that suppress_sequences, no_repeat_ngram_size and
  // disable_unk forbid and the end tokens before min_decoding_length at the lowest float
  // (-3.4e38: CTranslate2's "disabled", not -inf), before the log-softmax (and the sampling
  // temperature), as CTranslate2's return_logits_vocab. Empty otherwise.
  std::vector<std::vector<float>> logits;
  // With replace_unknowns: one entry per id, the position in the source's own tokens (as given,
  // cut to the model's positions; the model's framing not counted) with the highest attention
  // where the id is the unknown token, -1 elsewhere. Empty otherwise.
  std::vector<int64_t> unknown_sources;
};

// One sequence's Translator::score_sequences: the tokens scored (the sequence after its first
// token, as cut by max_input_length) and each one's log-probability.
struct SequenceScore {
  std::vector<int64_t> tokens;
  std::vector<float> log_probs;
};

struct TranslationResult {
  std::vector<TranslationHypothesis> hypotheses;  // best first; none for an empty source
  bool source_truncated = false;  // the source was longer than the model's positions and cut
};

// What the stream methods read and write: text lines through the vocabularies, or
// space-separated ids; one output line per input line, or with n_best the
// "index ||| hypothesis ||| score" lines of every hypothesis (Moses' n-best format).
struct StreamOptions {
  bool ids = false;
  bool n_best = false;
  // Input lines sorted by length together before decoding (a window); the stream writes each
  // output line as soon as it and every earlier line are done. Lines already readable are taken
  // without waiting, so an interactive pipe gets each answer without sending more; up to 8
  // windows of them are decoded at once (each batched on its own, so the results are those of
  // one window at a time), so the threads rarely wait for each other between windows.
  int64_t read_ahead = 256;
  // Where warnings go (a source cut to the model's positions, with its line); null: nowhere.
  std::ostream* warnings = nullptr;
  // A target prefix for each input line, one a line in lockstep with the input (text, or ids
  // with `ids`; an empty line is none), forced as translate_batch's target_prefix is: every
  // hypothesis, and so the output line, starts with it. Fewer or more prefix lines than input
  // lines is an error naming target_prefix_name. Null: no prefixes.
  std::istream* target_prefix = nullptr;
  std::string target_prefix_name = "<target prefix>";
  // Gives up when requested (a caller's Ctrl-C): no further window is read, the windows not yet
  // decoded leave the queue, and the method throws tfm::Error; the lines already written stay.
  std::stop_token stop;
};

// read_ahead in range, named through `name` (tfm::InvalidArgument otherwise).
void validate_stream_options(const StreamOptions& options, const OptionSpeller& name = field_name);

struct TranslationResult;

// The results of one asynchronous call (Translator::translate_async, generate_async): one per
// source, in input order, once every source has been decoded. Movable; the Translator must
// outlive it.
class AsyncResults {
 public:
  AsyncResults();
  ~AsyncResults();
  AsyncResults(AsyncResults&&) noexcept;
  AsyncResults& operator=(AsyncResults&&) noexcept;

  bool ready() const;
  // Waits until every result is in or `deadline` passes; true when they are in.
  bool wait_until(std::chrono::steady_clock::time_point deadline) const;
  // Waits, then hands the results over (once). Rethrows the search's failure (tfm::Error); a
  // cancelled call is a tfm::Error too.
  std::vector<TranslationResult> get();
  // Gives up: the sources not yet in a batch leave the queue and the call its admission slot
  // (what a server does when a request times out). get() then fails.
  void cancel();

  struct State;
  explicit AsyncResults(std::shared_ptr<State> state);

 private:
  std::shared_ptr<State> state_;
};

// A model directory's own search settings without loading it (Translator::default_options):
// TranslationOptions{} for tfm's models; a converted Transformers model's generation config's.
TranslationOptions read_default_options(const std::string& model_dir);

class Translator {
 public:
  // Loads model_dir (config, weights, and the SentencePiece vocabularies when present). Every
  // problem with the directory or the options is a tfm::Error.
  explicit Translator(const std::string& model_dir, const TranslatorOptions& options = {});
  ~Translator();
  Translator(Translator&&) noexcept;
  Translator& operator=(Translator&&) noexcept;

  const ModelInfo& model_info() const;
  const TranslatorOptions& options() const;  // compute_type resolved, thread counts filled in
  // The model's own search settings (read_default_options): TranslationOptions{} for tfm's
  // models; for a converted
  // Transformers model (model_info().search_rule "transformers"), its generation config's
  // num_beams, num_return_sequences, length_penalty and lengths, which generate() would use.
  // The command line, the server and the Python package start from these.
  TranslationOptions default_options() const;
  // The text methods need the directory's vocabularies, fitting the model (sizes, special ids).
  bool has_vocabularies() const;
  // A tfm::Error saying why the text methods cannot run (no vocabulary, or one that does not
  // fit the model), if they cannot.
  void require_vocabularies() const;

  // Text in, text out. An empty line gives a result without hypotheses.
  std::vector<TranslationResult> translate_batch(const std::vector<std::string>& sources,
                                                 const TranslationOptions& options = {}) const;
  // Source ids (without BOS/EOS; the model's framing is added) in, target ids out. Each id is
  // checked in 64 bits against the vocabulary, and PAD/BOS/EOS are refused (a converted model
  // whose tokenizer frames its sources takes those its config does not add): tfm::Error naming
  // the source. A NaN or infinite score (weights too large for the arithmetic) is a tfm::Error
  // naming the sentence, in every method that returns results.
  std::vector<TranslationResult> translate_batch(const std::vector<std::vector<int64_t>>& sources,
                                                 const TranslationOptions& options = {}) const;
  // With a target prefix per source (CTranslate2's target_prefix: a batch beside the sources,
  // since it is per sentence where the options apply to all): every hypothesis starts with its
  // prefix, forced, and the search continues from there; log_prob and score count the prefix's
  // tokens, and so does the output length. An empty prefix ("" or {}) is none, and so is an
  // empty target_prefix; otherwise it has one entry per source. Text prefixes are encoded by the
  // target vocabulary. A prefix must leave room for EOS within max_decoding_length and the
  // model's positions, and hold target ids other than PAD/BOS/EOS (tfm::Error otherwise). An
  // empty source still gives no hypotheses. `options` has no default here: with one, GCC finds
  // translate_batch(sources, {.beam_size = 4}) ambiguous.
  std::vector<TranslationResult> translate_batch(const std::vector<std::string>& sources,
                                                 const std::vector<std::string>& target_prefix,
                                                 const TranslationOptions& options) const;
  std::vector<TranslationResult> translate_batch(
      const std::vector<std::vector<int64_t>>& sources,
      const std::vector<std::vector<int64_t>>& target_prefix,
      const TranslationOptions& options) const;

  // A decoder-only model continues each prompt (target ids without EOS, or text the target
  // vocabulary encodes; an empty prompt starts from BOS alone; a prompt may start with BOS, the
  // token the decoder reads first, as CTranslate2's start tokens do, which is not part of the
  // hypotheses) by the search `options` describe:
  // greedy, beam or sampling, up to max_decoding_length tokens with EOS (the prompt counted) and
  // the model's positions (max_length_factor and max_length_extra scale a source, which there is
  // none of). Each hypothesis holds the prompt and its continuation, with log_prob as
  // score_batch (no sources) gives it; a prompt is forced as a target prefix is, and checked the
  // same way. An encoder-decoder model is an error (it translates).
  std::vector<TranslationResult> generate_batch(const std::vector<std::vector<int64_t>>& prompts,
                                                const TranslationOptions& options = {}) const;
  std::vector<TranslationResult> generate_batch(const std::vector<std::string>& prompts,
                                                const TranslationOptions& options = {}) const;
  // The asynchronous forms of translate_batch and generate_batch: the same checks, in the
  // calling thread (a bad option or source throws here), then the sources join the queue and
  // the call returns. `batching`: with whom they share batches. A tfm::QueueFull when
  // max_queued_requests calls are admitted already.
  AsyncResults translate_async(const std::vector<std::string>& sources,
                               const std::vector<std::string>& target_prefix,
                               const TranslationOptions& options,
                               Batching batching = Batching::own) const;
  AsyncResults translate_async(const std::vector<std::vector<int64_t>>& sources,
                               const std::vector<std::vector<int64_t>>& target_prefix,
                               const TranslationOptions& options,
                               Batching batching = Batching::own) const;
  AsyncResults generate_async(const std::vector<std::string>& prompts,
                              const TranslationOptions& options,
                              Batching batching = Batching::own) const;
  AsyncResults generate_async(const std::vector<std::vector<int64_t>>& prompts,
                              const TranslationOptions& options,
                              Batching batching = Batching::own) const;
  // From now on shared calls stop waiting for company (a server's drain).
  void flush() const;
  QueueStats queue_stats() const;

  // log P(target + EOS | source) of each pair, teacher-forced.
  std::vector<double> score_batch(const std::vector<std::string>& sources,
                                  const std::vector<std::string>& targets) const;
  std::vector<double> score_batch(const std::vector<std::vector<int64_t>>& sources,
                                  const std::vector<std::vector<int64_t>>& targets) const;
  // The same per token (CTranslate2's ScoringResult.log_probs): log P(target[t] | source,
  // target[<t]) for each target id, then EOS's, so target.size() + 1 values whose sum (in double)
  // is score_batch's. max_input_length > 0 cuts each source as translate_batch's option does
  // (framing counted, its end kept) and each target to max_input_length - 1 ids (room for BOS
  // and EOS), as CTranslate2's score_batch does; 0 cuts nothing (a target too long for the
  // model's positions is an error, as in score_batch). `stop` gives up (a caller's Ctrl-C): the
  // batches not yet scored are skipped and the call throws tfm::Error.
  std::vector<std::vector<float>> score_batch_per_token(
      const std::vector<std::vector<int64_t>>& sources,
      const std::vector<std::vector<int64_t>>& targets, int64_t max_input_length = 0,
      std::stop_token stop = {}) const;

  // A decoder-only model's sequences scored as the decoder reads them (CTranslate2's
  // Generator.score_batch): each sequence's first token is read first, and each later token t
  // gets log P(seq[t] | seq[<t]), so seq.size() - 1 values (none for a sequence of one token or
  // none); no end token is added. max_input_length > 0 cuts each sequence to that many tokens
  // first, as CTranslate2 cuts (an end token that ended it stays last); 0 cuts nothing (a
  // sequence longer than the model's positions is an error). `stop` as score_batch_per_token's.
  std::vector<SequenceScore> score_sequences(const std::vector<std::vector<int64_t>>& sequences,
                                             int64_t max_input_length = 0,
                                             std::stop_token stop = {}) const;

  // The model's vocabularies on one text (what the text methods do before translating or
  // scoring), for callers that check or store ids. Require has_vocabularies().
  std::vector<int64_t> tokenize_source(const std::string& text) const;
  std::vector<int64_t> tokenize_target(const std::string& text) const;
  // The same as SentencePiece pieces ("▁Ein", "▁Hund"), and pieces <-> ids, for callers that
  // tokenise themselves (CTranslate2's token lists); a converted model's source tokens include
  // its framing ("deu_Latn", "</s>"), as tokenize_source's ids do. A piece not in the vocabulary
  // is its unknown id. Require has_vocabularies().
  std::vector<std::string> source_tokens(const std::string& text) const;
  std::vector<int64_t> source_tokens_to_ids(const std::vector<std::string>& tokens) const;
  std::vector<int64_t> target_tokens_to_ids(const std::vector<std::string>& tokens) const;
  std::vector<std::string> target_ids_to_tokens(const std::vector<int64_t>& ids) const;

  // Translates `in` line by line to `out` (see StreamOptions). Input errors name `source_name`
  // and the line. Throws tfm::Error when `out` fails (a full disk is not a success).
  void translate_stream(std::istream& in, std::ostream& out, const TranslationOptions& options = {},
                        const StreamOptions& stream = {},
                        const std::string& source_name = "<input>") const;
  // The same for a decoder-only model: each line of `in` is a prompt (text, or target ids with
  // stream.ids; an empty line starts from BOS alone), continued as generate_batch does, and each
  // output line is the prompt with its continuation (n-best: 'index ||| text ||| score'). The
  // windows, order and errors are translate_stream's; stream.target_prefix must be null (the
  // prompts are the prefixes).
  void generate_stream(std::istream& in, std::ostream& out, const TranslationOptions& options = {},
                       const StreamOptions& stream = {},
                       const std::string& source_name = "<input>") const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tfm
