// A converted Transformers model's generation config (generation.json) as tfm's options: the
// defaults generate() would use (Translator::default_options), and the transformers search
// rule's settings for each search.
#pragma once

#include <cstdint>
#include <optional>

#include "tfm/decode/search.h"
#include "tfm/model/generation_config.h"
#include "tfm/translator.h"

namespace tfm::runtime {

// num_beams, num_return_sequences, length_penalty and the lengths in TranslationOptions' terms
// (which count the output, the prefix included, where generate()'s max_length and min_length
// count the decoder's start token too).
TranslationOptions generation_defaults(const GenerationConfig& g, const ModelConfig& c);

// Turns o into the transformers rule with g's settings. target_lang_id: the target language's
// token (TranslationOptions::target_lang, resolved), forced first or starting the decoder as
// g.target_language says; nullopt: g's own forced_bos_token_id.
// A converted model decoded by tfm's rule (TranslationOptions::search_rule "tfm"), as
// CTranslate2 decodes its conversion: the generation config is ignored, but a Marian model's PAD
// (its decoder's start token, which CTranslate2's converter removes from the vocabulary) is
// removed before the softmax.
void apply_tfm_rule(decode::SearchOptions& o, const GenerationConfig& g, const ModelConfig& c);

// explicit_ngram: o.no_repeat_ngram_size is the call's own (TranslationOptions' >= 0), kept.
void apply_generation(decode::SearchOptions& o, const GenerationConfig& g,
                      std::optional<int64_t> target_lang_id, bool explicit_ngram = false);

}  // namespace tfm::runtime
