// The server's JSON: requests of POST /v1/translate (and /v1/generate) and of LibreTranslate's
// POST /translate parsed and checked (a malformed body, an unknown field, a wrong type or a
// number JSON cannot hold is an HttpError 400 that names the field), and the answers written.
// No HTTP here: the routes in server.cpp call these.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tfm/model_info.h"
#include "tfm/serve/form.h"
#include "tfm/serve/http_message.h"
#include "tfm/translator.h"

namespace tfm::serve {

// Beam sizes above this cost a server more than any client gains from them.
inline constexpr int64_t kMaxBeamSize = 64;

// How the JSON requests name the translation options ('n_best', 'sampling.topk'): the speller of
// the server's validation messages.
std::string json_name(std::string_view field);

struct TranslateRequest {
  std::vector<std::string> texts;
  bool single = false;                     // "text" was one string, not a list
  std::vector<std::string> target_prefix;  // empty, or one per text ("" for none)
  TranslationOptions options;
  bool return_scores = false;
};

// {"text": str | [str], "target_prefix": str | [str] (shaped as "text"), "beam_size", "n_best",
//  "length_penalty", "normalize_scores", "max_length", "max_new_tokens", "min_length",
//  "source_lang", "target_lang", "sampling": {"topk", "topp", "temperature", "seed"},
//  "return_scores", "return_attention"}. A search field left out takes `defaults`' value (the
// model's own: Translator::default_options). Any other field is a 400 that names it and the
// closest known one. More than max_sentences texts: HttpError 413.
TranslateRequest parse_translate_request(const std::string& body, int64_t max_sentences,
                                         const TranslationOptions& defaults = {});

// The request's options checked by validate_translation_options in the JSON's names, with the
// server's caps (kMaxBeamSize): a bad value is an HttpError 400 that names it.
void validate_request(const TranslateRequest& request, const ModelInfo& model);

// The labels of a hypothesis's attention matrix: a column per source position as the model
// reads it, a row per target token.
struct AttentionLabels {
  std::vector<std::string> source;               // per text
  std::vector<std::vector<std::string>> target;  // per hypothesis
};

// {"translations": [...], "scores": [...]?, "attention": [...]?, "warnings": [...]?}: one entry
// per text (a list of n_best entries when n_best > 1). With return_attention, each hypothesis's
// {"source_tokens", "target_tokens", "weights"} (one row per target token), `labels` one per
// text. POST /v1/generate takes the same request (its texts are prompts; no target_prefix) and
// answers the same with `key` "generations".
std::string translate_response(const TranslateRequest& request,
                               const std::vector<TranslationResult>& results,
                               int64_t model_positions, const char* key = "translations",
                               const std::vector<AttentionLabels>& labels = {});

// LibreTranslate's request: q (a string or a list), source, target, format ("text" or
// "html"), alternatives (more translations of each q, best first), api_key.
struct LibreRequest {
  std::vector<std::string> q;
  bool single = false;
  std::string source = "auto", target, format = "text", api_key;
  int64_t alternatives = 0;
};
LibreRequest parse_libre_json(const std::string& body, int64_t max_sentences);
// The same from form fields (application/x-www-form-urlencoded or multipart): every q, in order.
LibreRequest parse_libre_form(const FormFields& fields, int64_t max_sentences);
// {"translatedText": str | [str], "alternatives": [str] | [[str]] (with alternatives)}; each
// entry's hypotheses best first (the first is translatedText).
std::string libre_response(const LibreRequest& request,
                           const std::vector<std::vector<std::string>>& translations);

// GET /languages: LibreTranslate's [{"code", "name", "targets"}], one entry per source
// language with the codes it translates to.
struct LanguagePair {
  std::string source, target;
};
std::string languages_response(const std::vector<LanguagePair>& pairs);
// The English name of an ISO 639-1 code ("de" -> "German"), or the code itself.
std::string language_name(std::string_view code);

// GET /frontend/settings, what LibreTranslate's web frontend and clients read before they
// translate: {"charLimit": -1 (no limit on characters; the server's limit is on a body's bytes),
// "frontendTimeout": the page's wait after a key in ms, "apiKeys" and "keyRequired": whether a
// key is wanted, "suggestions": false, "filesTranslation": false, "supportedFilesFormat": [],
// "language": {"source": {"code", "name"}, "target": {...}}}: the first pair of `pairs`, or
// "auto" to "" when the server knows none.
std::string frontend_settings_response(const std::vector<LanguagePair>& pairs, bool key_required,
                                       int64_t frontend_timeout_ms);

// GET /v1/model: the config, the vocabulary sizes and how the model runs.
std::string model_response(const ModelInfo& info, const TranslatorOptions& options);

// {"error": message}.
std::string error_body(const std::string& message);

}  // namespace tfm::serve
