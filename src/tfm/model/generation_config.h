// generation.json: what a model directory converted from Hugging Face Transformers keeps of its
// origin besides the weights — the family, the tokenizer's kind, how the target language reaches
// the decoder, the precision chosen at conversion, and the generation config that Transformers'
// generate() follows (num_beams, length_penalty, max_length, bad_words_ids, forced_bos_token_id,
// ...). A directory with this file decodes as generate() does by default (decode::SearchRule::
// transformers); one without it is one of tfm's own models.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tfm/data/batch.h"

namespace tfm {

// generate()'s early_stopping: false (its heuristic), true (stop once num_beams hypotheses are
// finished) or "never" (the canonical beam search bound).
enum class EarlyStopping : uint8_t { heuristic, finished, never };
const char* to_string(EarlyStopping e);  // "false" | "true" | "never"

// How a target language code reaches the decoder: forced as the first generated token
// (forced_bos_token_id: NLLB, M2M100, mBART-50), as the decoder's start token (mBART cc25), or
// not at all (a monolingual model).
enum class TargetLanguage : uint8_t { none, forced_bos, decoder_start };
const char* to_string(TargetLanguage t);

struct GenerationConfig {
  std::string family;        // "marian", "m2m_100", "nllb", "bart", "mbart", "gpt2"
  std::string tokenizer;     // the tokenizer's kind ("" when the directory has none)
  std::string compute_type;  // the precision chosen at conversion ("" = fp32 unless asked)
  TargetLanguage target_language = TargetLanguage::none;
  bool source_language = false;  // the tokenizer puts a source language code into the input

  // generate()'s settings, as the Transformers generation config names them.
  int64_t num_beams = 1;
  int64_t num_return_sequences = 1;
  double length_penalty = 1.0;
  EarlyStopping early_stopping = EarlyStopping::heuristic;
  std::optional<int64_t> max_length;      // decoder tokens, its start (prompt) counted
  std::optional<int64_t> max_new_tokens;  // generated tokens, EOS counted
  int64_t min_length = 0;                 // as max_length
  int64_t min_new_tokens = 0;             // as max_new_tokens
  int64_t no_repeat_ngram_size = 0;
  std::vector<Ids> bad_words_ids;
  std::optional<int64_t> forced_bos_token_id, forced_eos_token_id;

  // Throws tfm::Error naming the field when a value is out of range for a model with
  // `vocab` target tokens.
  void validate(int64_t vocab) const;
  std::string to_json() const;
  static GenerationConfig from_json(const std::string& text, const std::string& what);
};

inline constexpr const char* kGenerationFile = "generation.json";

// dir/generation.json, or nullopt when the directory has none (a tfm model).
std::optional<GenerationConfig> read_generation_config(const std::string& dir);
void write_generation_config(const GenerationConfig& g, const std::string& dir);

}  // namespace tfm
