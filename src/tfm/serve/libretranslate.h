// LibreTranslate's POST /translate over the server's translation: the request read from JSON,
// a urlencoded form or a multipart form (every q kept, the URL's query not mixed in), its
// languages checked against the server's, plain text or HTML (the text between the tags
// translated), `alternatives` as n-best, and LibreTranslate's answer.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tfm/serve/api.h"
#include "tfm/serve/http_message.h"

namespace tfm::serve {

// Texts to their results (the server's shared batches, within its timeout).
using TranslateTexts = std::function<std::vector<TranslationResult>(const std::vector<std::string>&,
                                                                    const TranslationOptions&)>;

// The request from its body, as its Content-Type says.
LibreRequest parse_libre_request(const HttpRequest& request, int64_t max_sentences);

// Translates a parsed request; `languages` (when not empty) are the pairs the server
// translates, which source and target must name. The answer's JSON.
std::string run_libre_request(const LibreRequest& request,
                              const std::vector<LanguagePair>& languages, const ModelInfo& model,
                              int64_t max_sentences, const TranslateTexts& translate);

}  // namespace tfm::serve
