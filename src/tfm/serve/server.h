// tfm serve: a model behind HTTP (docs/serve.md): JSON in, the Translator's asynchronous
// interface (translate_async / generate_async with Batching::shared: the runtime batches the
// sentences of concurrent requests), JSON out. POST /v1/translate, /v1/generate and
// LibreTranslate's POST /translate go through it on the transport's workers; GET /health,
// /metrics (Prometheus), /v1/model, /languages and the translate page (GET /) answer at once on
// its event loop (http_server.h). No tokenizer and no batcher here: text goes to the Translator
// as text. The server keeps no state between requests, so N of them behind any HTTP load
// balancer scale out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tfm/error.h"
#include "tfm/translator.h"

namespace tfm::serve {

// The translator a server runs by default: batches of up to 4096 source tokens gathered from
// concurrent requests, which wait up to 5 ms for company; 128 requests admitted at once.
inline TranslatorOptions serve_translator_defaults() {
  TranslatorOptions t;
  t.max_batch_tokens = 4096;
  t.max_batch_delay_ms = 5;
  t.max_queued_requests = 128;
  return t;
}

struct ServeOptions {
  std::string model_dir;
  std::string host = "127.0.0.1";  // loopback unless told otherwise
  int port = 8080;                 // 0: any free port (the log line names it)
  // The model's, and the batching: max_batch_tokens, max_batch_delay_ms and max_queued_requests
  // (a request over the limit gets 503) are the server's dynamic batching.
  TranslatorOptions translator = serve_translator_defaults();
  int64_t max_request_bytes = 1 << 20;  // a larger body (decoded): 413
  int64_t max_sentences = 256;          // texts a request; more: 413
  int64_t timeout_ms = 30000;           // from arrival to answer; later: 504
  // A request's head and body must arrive within this of its first byte; later: 408.
  int64_t read_timeout_ms = 30000;
  // Connections waiting for (or sending) a request at once; one more closes the oldest.
  int64_t max_pending_connections = 1024;
  std::string api_key;  // non-empty: "Authorization: Bearer KEY" required
  // Origins whose pages may call the API ("*": any), answered with CORS headers.
  std::vector<std::string> cors_origins;
  // The language pair GET /languages lists (LibreTranslate's codes, "de" and "en"); empty: none
  // known (a model's own language table, once models carry one, goes here too).
  std::string source_lang, target_lang;
};

// The server's own options in range (port, limits), named through `name`; the translator's are
// validate_translator_options'. tfm::InvalidArgument names the first bad one.
void validate_serve_options(const ServeOptions& options, const OptionSpeller& name = field_name);

// Loads the model, then answers on host:port until SIGTERM or SIGINT; then it stops accepting,
// closes the connections without a complete request, answers every request already read, and
// returns. A second SIGTERM or SIGINT during that drain ends the process at once, as the
// signal's default action does. Writes to stderr the address once listening ("tfm serve:
// listening on http://HOST:PORT") and one access-log line per request. tfm::Error when the
// model does not load or the address cannot be bound.
void serve(const ServeOptions& options);

}  // namespace tfm::serve
