// tfm::Translator: a model directory loaded once, translating and scoring text or token ids.
//
//   tfm::Translator t("model/", {.compute_type = tfm::ComputeType::automatic});
//   auto results = t.translate_batch({"Ein Hund läuft.", "Zwei Katzen."}, {.beam_size = 4});
//   std::cout << results[0].hypotheses[0].text << "\n";
//
// The translator owns everything between text and the search: SentencePiece tokenisation, the
// model's source framing, truncation to the model's positions, sorting by length and cutting
// into batches (max_batch_size sentences, max_batch_tokens padded tokens), and restoring input
// order. Results do not depend on the batching or the thread counts.
//
// Thread safety: every method is const and may be called from several threads at once; all
// callers share the one copy of the weights. inter_threads > 1 also runs the batches of one call
// in parallel, each worker with intra_threads threads of its own.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "tfm/error.h"
#include "tfm/model_info.h"
#include "tfm/types.h"

namespace tfm {

struct TranslatorOptions {
  // cpu, or cuda in a build with the CUDA backend on a machine with a GPU: the model's f32
  // weights on the device, compute_type fp32 (or auto), inter_threads 1.
  Device device = Device::cpu;
  // Resolved once, at load: automatic is bf16 where the CPU multiplies bf16, else fp32.
  ComputeType compute_type = ComputeType::float32;
  int intra_threads = 0;         // threads of each batch's ops; 0: all cores / inter_threads
  int inter_threads = 1;         // batches translated at once, sharing the weights
  int64_t max_batch_size = 32;   // sentences a batch
  int64_t max_batch_tokens = 0;  // padded source tokens a batch; 0: no limit
};

struct TranslationOptions {
  int64_t beam_size = 1;          // 1: greedy (or sampling)
  int64_t num_hypotheses = 1;     // returned per sentence; at most beam_size
  double length_penalty = 0.0;    // GNMT alpha; 0: the raw sum of log-probabilities
  bool normalize_scores = false;  // rank by log-probability / length instead
  // Max output length (tokens with EOS) = max_length_factor * source length + max_length_extra,
  // capped by max_decoding_length and by the model's positions.
  double max_length_factor = 2.0;
  int64_t max_length_extra = 10;
  int64_t max_decoding_length = 1024;
  int64_t min_decoding_length = 0;  // tokens before EOS is allowed
  // Random sampling (beam_size must be 1): temperature, then the top k (0: all), then nucleus p.
  bool sampling = false;
  double sampling_temperature = 1.0;
  int64_t sampling_topk = 0;
  double sampling_topp = 1.0;
  uint64_t seed = 0;  // with a sentence's index in the call, keys its random stream
  // Fill TranslationHypothesis::attention (translate_stream, which writes text, ignores it).
  bool return_attention = false;
};

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
};

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
  // The text methods need the directory's vocabularies, fitting the model (sizes, special ids).
  bool has_vocabularies() const;
  // A tfm::Error saying why the text methods cannot run (no vocabulary, or one that does not
  // fit the model), if they cannot.
  void require_vocabularies() const;

  // Text in, text out. An empty line gives a result without hypotheses.
  std::vector<TranslationResult> translate_batch(const std::vector<std::string>& sources,
                                                 const TranslationOptions& options = {}) const;
  // Source ids (without BOS/EOS; the model's framing is added) in, target ids out.
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

  // A decoder-only model continues each prompt (target ids without BOS/EOS, or text the target
  // vocabulary encodes; an empty prompt starts from BOS alone) by the search `options` describe:
  // greedy, beam or sampling, up to max_decoding_length tokens with EOS (the prompt counted) and
  // the model's positions (max_length_factor and max_length_extra scale a source, which there is
  // none of). Each hypothesis holds the prompt and its continuation, with log_prob as
  // score_batch (no sources) gives it; a prompt is forced as a target prefix is, and checked the
  // same way. An encoder-decoder model is an error (it translates).
  std::vector<TranslationResult> generate_batch(const std::vector<std::vector<int64_t>>& prompts,
                                                const TranslationOptions& options = {}) const;
  std::vector<TranslationResult> generate_batch(const std::vector<std::string>& prompts,
                                                const TranslationOptions& options = {}) const;
  // generate_batch's checks alone (the model, every option, each prompt), generating nothing: a
  // tfm::Error names the first problem. A server runs them on each request before its prompts
  // share a batch with other requests'.
  void check_generate_batch(const std::vector<std::vector<int64_t>>& prompts,
                            const TranslationOptions& options) const;

  // log P(target + EOS | source) of each pair, teacher-forced.
  std::vector<double> score_batch(const std::vector<std::string>& sources,
                                  const std::vector<std::string>& targets) const;
  std::vector<double> score_batch(const std::vector<std::vector<int64_t>>& sources,
                                  const std::vector<std::vector<int64_t>>& targets) const;

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
