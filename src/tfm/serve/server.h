// tfm serve: a model behind HTTP (docs/serve.md). POST /v1/translate and LibreTranslate's
// POST /translate go through the dynamic batcher (batcher.h); GET /health, /metrics (Prometheus)
// and /v1/model answer at once. The server keeps no state between requests, so N of them behind
// any HTTP load balancer scale out.
#pragma once

#include <cstdint>
#include <string>

#include "tfm/serve/batcher.h"
#include "tfm/translator.h"

namespace tfm::serve {

struct ServeOptions {
  std::string model_dir;
  std::string host = "127.0.0.1";  // loopback unless told otherwise
  int port = 8080;                 // 0: any free port (the log line names it)
  TranslatorOptions translator;
  BatcherOptions batcher;
  int64_t max_request_bytes = 1 << 20;  // a larger body: 413
  int64_t max_sentences = 256;          // texts a request; more: 413
  int64_t timeout_ms = 30000;           // from arrival to answer; later: 504
  std::string api_key;                  // non-empty: "Authorization: Bearer KEY" required
};

// Loads the model, then answers on host:port until SIGTERM or SIGINT; then it stops accepting,
// answers every request already received, and returns. Writes to stderr the address once
// listening ("tfm serve: listening on http://HOST:PORT") and one access-log line per request.
// tfm::Error when the model does not load or the address cannot be bound.
void serve(const ServeOptions& options);

}  // namespace tfm::serve
