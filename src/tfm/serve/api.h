// The server's JSON: requests of POST /v1/translate (and /v1/generate) and of LibreTranslate's
// POST /translate
// parsed and checked (a malformed body or a wrong type is an HttpError 400 that says which
// field), and the answers written. No HTTP library here: the handlers in server.cpp call these.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tfm/model_info.h"
#include "tfm/translator.h"

namespace tfm::serve {

// An answer other than 200: its status code and a message (sent as {"error": message}).
class HttpError : public std::runtime_error {
 public:
  HttpError(int status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

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
//  "length_penalty", "max_length", "sampling": {"topk", "topp", "temperature", "seed"},
//  "return_scores"}. More than max_sentences texts: HttpError 413.
TranslateRequest parse_translate_request(const std::string& body, int64_t max_sentences);

// The request's options checked by validate_translation_options in the JSON's names, with the
// server's caps (kMaxBeamSize): a bad value is an HttpError 400 that names it.
void validate_request(const TranslateRequest& request, const ModelInfo& model);

// {"translations": [...], "scores": [...]?, "warnings": [...]?}: one entry per text (a list of
// n_best entries when n_best > 1), the hypotheses' text already filled in. POST /v1/generate
// takes the same request (its texts are prompts; no target_prefix) and answers the same with
// `key` "generations".
std::string translate_response(const TranslateRequest& request,
                               const std::vector<TranslationResult>& results,
                               int64_t model_positions, const char* key = "translations");

// LibreTranslate's request: q (a string or a list), source, target, format, api_key.
struct LibreRequest {
  std::vector<std::string> q;
  bool single = false;
  std::string source, target, format = "text", api_key;
};
LibreRequest parse_libre_json(const std::string& body, int64_t max_sentences);
// The same from form fields (application/x-www-form-urlencoded or multipart): each name's values.
LibreRequest parse_libre_form(const std::multimap<std::string, std::string>& fields,
                              int64_t max_sentences);
// {"translatedText": str | [str]}.
std::string libre_response(const LibreRequest& request,
                           const std::vector<TranslationResult>& results);

// GET /v1/model: the config, the vocabulary sizes and how the model runs.
std::string model_response(const ModelInfo& info, const TranslatorOptions& options);

// {"error": message}.
std::string error_body(const std::string& message);

}  // namespace tfm::serve
