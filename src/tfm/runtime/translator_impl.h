// Translator::Impl: the loaded model, its vocabularies, the worker pool and the request queue,
// and the preparation every call shares (checks, tokenisation, cutting, results). The public
// methods are translator.cpp; translate_stream and generate_stream are translate_stream.cpp.
#pragma once

#include <cstdint>

#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <optional>

#include "tfm/data/tokenizer_files.h"
#include "tfm/data/vocab.h"
#include "tfm/model/generation_config.h"
#include "tfm/model/transformer.h"
#include "tfm/runtime/request_queue.h"
#include "tfm/runtime/step_relay.h"
#include "tfm/runtime/worker_pool.h"
#include "tfm/translator.h"

namespace tfm {

// A request as the queue takes it, and what turning its results into TranslationResults needs.
struct PreparedRequest {
  runtime::Request request;
  std::vector<char> truncated;  // per source: cut to the model's positions
  std::vector<int64_t> widths;  // per source: the framed source's positions (attention rows)
  bool return_end_token = false;
  bool attention_framing = true;
  std::shared_ptr<runtime::StepRelay> relay;  // the call's step callback, if any
  // replace_unknowns: the target vocabulary's unknown id (-1: not asked for), and whether the
  // caller asked for the attention itself (else the search kept it for the replacement alone).
  int64_t unk_id = -1;
  bool return_attention = false;
  bool return_scores = true;
};

// What AsyncResults holds: the queue's Pending and how to finish its results.
struct AsyncResults::State {
  const Translator::Impl* impl = nullptr;
  std::shared_ptr<runtime::Pending> pending;
  bool text = false;
  std::vector<char> truncated;
  std::vector<int64_t> widths;
  bool return_end_token = false;
  bool attention_framing = true;
  std::shared_ptr<runtime::StepRelay> relay;  // cancelled with the call
  int64_t unk_id = -1;
  bool return_attention = false;
  bool return_scores = true;
};

class Translator::Impl {
 public:
  Impl(const std::string& dir, TranslatorOptions o);
  ~Impl();

  const ModelConfig& config() const { return model_->config(); }
  const ModelInfo& info() const { return info_; }
  const TranslatorOptions& options() const { return options_; }
  const ModelTokenizers& vocabs() const { return vocabs_; }
  bool has_vocabs() const { return vocabs_.src != nullptr; }
  void require_vocabs() const;
  void require_encoder() const;
  void require_decoder_only() const;

  // A text's ids; with `enough`, possibly of its beginning only, as long as more than `enough`
  // ids come out (encode_prefix.h): what a source cut to the model's positions, or a prefix
  // refused beyond them, needs.
  // source_lang: a converted multilingual model's source language code, framing the source
  // ("": the tokenizer's default).
  Ids encode_src(const std::string& text, const std::string& source_lang = "",
                 size_t enough = SIZE_MAX, bool* cut = nullptr) const;
  Ids encode_trg(const std::string& text, size_t enough = SIZE_MAX, bool* cut = nullptr) const;
  // The ids a source may have (the model's positions less its framing), and a prefix or prompt.
  size_t source_room() const {
    return static_cast<size_t>(config().max_length - config().seq_format().source_specials());
  }
  size_t target_room() const { return static_cast<size_t>(config().max_length); }
  // Texts' ids as encode_src (sources) or encode_trg (prefixes, prompts) give them with the
  // model's room, and which of them are of a beginning only.
  struct EncodedTexts {
    std::vector<std::vector<int64_t>> ids;
    std::vector<char> cut;
  };
  EncodedTexts encode_texts(const std::vector<std::string>& texts, bool sources,
                            const std::string& source_lang = "") const;
  std::string decode_trg(const Ids& ids) const;

  // The options checked (in the API's words) and turned into the search's: the transformers
  // rule with its generation config for a converted model.
  decode::SearchOptions checked_search(const TranslationOptions& options) const;
  // options.step_callback relayed by `search` (runtime::StepRelay::attach), its tokens named by
  // the target vocabulary when there is one; null without a callback.
  std::shared_ptr<runtime::StepRelay> relay_steps(decode::SearchOptions& search,
                                                  const TranslationOptions& options) const;
  // TranslationOptions{}, or a converted model's generation config's settings.
  TranslationOptions default_options() const;
  // A language code's token id, by the model's source (`what` "source_lang") or target
  // tokenizer; `what` names the option in the InvalidArgument error.
  int64_t language_id(const std::string& code, const char* what) const;
  // Source ids checked against the vocabulary and cut to the model's positions, and to
  // max_input_length of them with the framing (0: no such limit); true when cut.
  bool prepare_source(Ids& ids, const std::string& where, int64_t max_input_length = 0) const;
  // A prefix's ids are target ids other than PAD/BOS/EOS and leave room for EOS; errors start
  // with `where`. `cut`: the ids are of the text's beginning only (encode_enough): too long.
  // `leading_bos`: its first id is the model's BOS, which the decoder reads first (a
  // decoder-only prompt's start token, generation()), exempt from the special-id check.
  void check_prefix(const Ids& prefix, const std::string& where, const TranslationOptions& o,
                    bool cut = false, bool leading_bos = false) const;

  // A request with the checked options and no sentences yet.
  PreparedRequest empty_request(const TranslationOptions& options, Batching batching) const;
  // A translate_batch / generate_batch call's request, every input checked in the API's words.
  // The cut flags (encode_texts') mark a source as truncated and refuse a prefix or prompt.
  PreparedRequest translation(const std::vector<std::vector<int64_t>>& sources,
                              const std::vector<std::vector<int64_t>>& prefixes,
                              const TranslationOptions& options, Batching batching,
                              const std::vector<char>& cut_sources = {},
                              const std::vector<char>& cut_prefixes = {}) const;
  PreparedRequest generation(const std::vector<std::vector<int64_t>>& prompts,
                             const TranslationOptions& options, Batching batching,
                             const std::vector<char>& cut_prompts = {}) const;
  // Into the queue; refusable: an asynchronous call (QueueFull when the queue is at its limit).
  std::shared_ptr<runtime::Pending> submit(runtime::Request request, bool refusable) const;
  AsyncResults submit(PreparedRequest prepared, bool text, bool refusable) const;
  void flush() const { queue_->flush(); }
  QueueStats queue_stats() const { return queue_->stats(); }

  // Ids from the API (64 bits) as the model takes them (32 bits), each checked against the side's
  // vocabulary ("source" or "target") before narrowing: narrowing first made 2^32 + 5 the id 5.
  Ids narrow_ids(const std::vector<int64_t>& ids, bool source, const std::string& where) const;

  // Throws naming `where` (a sentence, or file:line) when a hypothesis's score or log-probability
  // is NaN or infinite: the model's outputs overflowed (weights too large for its arithmetic),
  // and no such result is returned or printed.
  static void check_scores(const decode::NBest& nb, const std::string& where);

  // A search's n-best as the API returns it; width: the attention rows'; end_token: the ids end
  // with EOS; framing: the attention rows keep the framing's columns; unk_id >= 0: fill
  // unknown_sources (replace_unknowns), keeping the attention only with return_attention;
  // scores: score and log_prob as the search gave them, or NaN (return_scores off).
  TranslationResult to_result(decode::NBest& nb, bool text, int64_t width, bool end_token = false,
                              bool framing = true, int64_t unk_id = -1,
                              bool return_attention = true, bool scores = true) const;

  // Per pair, the log-probability of each target token, then EOS's (score_pairs_per_token),
  // every input checked; max_input_length and stop as score_batch_per_token takes them.
  // start_id: the decoder's first input (-1: BOS).
  std::vector<std::vector<float>> score(std::vector<Ids> src, std::vector<Ids> trg,
                                        int64_t max_input_length = 0,
                                        const std::stop_token& stop = {},
                                        int64_t start_id = -1) const;

  // Translator::score_sequences: by the sequences' first tokens, each group one scoring call
  // whose decoder starts from that token.
  std::vector<SequenceScore> score_sequences(std::vector<Ids> seqs, int64_t max_input_length,
                                             const std::stop_token& stop = {}) const;

  // Lines in, lines out (translate_stream.cpp): each input line a source, or a prompt.
  void stream(std::istream& in, std::ostream& out, const TranslationOptions& options,
              const StreamOptions& stream, const std::string& source_name, bool prompts) const;

 private:
  TranslatorOptions options_;
  std::unique_ptr<Transformer> model_;
  ModelTokenizers vocabs_;
  std::optional<GenerationConfig> generation_;  // a converted model's generation.json
  std::string vocab_error_;  // why the directory's vocabularies cannot be used, if they cannot
  ModelInfo info_;
  std::unique_ptr<runtime::WorkerPool> pool_;
  std::unique_ptr<runtime::RequestQueue> queue_;  // last: stopped before the pool and the model
};

}  // namespace tfm
