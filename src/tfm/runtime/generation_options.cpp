#include "tfm/runtime/generation_options.h"

#include <algorithm>

#include "tfm/core/check.h"
#include "tfm/model/checkpoint.h"

namespace tfm::runtime {

TranslationOptions generation_defaults(const GenerationConfig& g, const ModelConfig& c) {
  TranslationOptions t;
  t.beam_size = g.num_beams;
  t.search = search_for(g.num_beams, /*sampling=*/false);
  t.num_hypotheses = g.num_return_sequences;
  t.length_penalty = g.length_penalty;
  // generate()'s max_length and min_length count the decoder's start token, an encoder-decoder
  // model's output does not; a decoder-only model's prompt counts in both.
  const int64_t start = c.has_encoder() ? 1 : 0;
  // max_new_tokens takes precedence over max_length, as in generate().
  t.max_decoding_length = g.max_length && !g.max_new_tokens
                              ? std::max<int64_t>(1, *g.max_length - start)
                              : c.max_length;
  if (g.max_new_tokens) t.max_new_tokens = *g.max_new_tokens;
  t.min_decoding_length = std::max<int64_t>(0, g.min_length - start);
  if (c.has_encoder()) t.min_decoding_length = std::max(t.min_decoding_length, g.min_new_tokens);
  // generate() has no source-scaled limit.
  t.max_length_factor = 0;
  t.max_length_extra = std::min<int64_t>(t.max_decoding_length, 1'000'000);
  return t;
}

void apply_generation(decode::SearchOptions& o, const GenerationConfig& g,
                      std::optional<int64_t> target_lang_id, bool explicit_ngram) {
  o.rule = decode::SearchRule::transformers;
  o.early_stopping = g.early_stopping;
  // A call's own no_repeat_ngram_size (>= 0; to_search_options) over the config's.
  if (!explicit_ngram) o.no_repeat_ngram_size = g.no_repeat_ngram_size;
  o.bad_words_ids = g.bad_words_ids;
  o.forced_bos_id = g.forced_bos_token_id.value_or(-1);
  o.forced_eos_id = g.forced_eos_token_id.value_or(-1);
  if (target_lang_id) {
    TFM_CHECK(g.target_language != TargetLanguage::none)
        << "target_lang: this " << g.family << " model has no target languages to choose";
    if (g.target_language == TargetLanguage::forced_bos)
      o.forced_bos_id = *target_lang_id;
    else
      o.decoder_start_id = *target_lang_id;
  }
}

void apply_tfm_rule(decode::SearchOptions& o, const GenerationConfig& g, const ModelConfig& c) {
  if (g.family == "marian") o.suppress_sequences.push_back({static_cast<int32_t>(c.pad_id)});
}

}  // namespace tfm::runtime

namespace tfm {

TranslationOptions read_default_options(const std::string& model_dir) {
  const auto g = read_generation_config(model_dir);
  return g ? runtime::generation_defaults(*g, read_model_config(model_dir)) : TranslationOptions{};
}

}  // namespace tfm
