// Fuzz target for the server's request path, bytes to routes' input: the HTTP/1.1 parser with
// content decoding (serve/http_parser.h), then each request's body as the routes read it (the
// /v1/translate JSON, LibreTranslate's JSON, form and multipart bodies, HTML). Invariants: the
// bytes parse to the same requests (or the same refusal) whether fed whole or in pieces (the
// first input byte picks their size); a body never exceeds the limit; an HTML document's texts
// survive being joined back and split again; only HttpError escapes (anything else would be a
// 500).
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "tfm/serve/api.h"
#include "tfm/serve/form.h"
#include "tfm/serve/html_text.h"
#include "tfm/serve/http_parser.h"
#include "tfm/serve/libretranslate.h"

namespace {

using tfm::serve::HttpError;
using tfm::serve::HttpRequest;

constexpr size_t kLimit = 4096;

struct Parsed {
  std::vector<std::string> requests;  // method, path, query and body of each
  std::vector<HttpRequest> full;
  int refusal = 0;
  bool operator==(const Parsed& o) const { return requests == o.requests && refusal == o.refusal; }
};

Parsed parse_all(std::string_view bytes, const tfm::serve::HttpLimits& limits, size_t piece) {
  Parsed out;
  tfm::serve::RequestParser p(limits);
  std::string pending;
  size_t at = 0;
  try {
    while (at < bytes.size() || !pending.empty()) {
      if (at < bytes.size()) {
        pending.append(bytes.substr(at, piece));
        at += std::min(piece, bytes.size() - at);
      }
      const size_t used = p.feed(pending);
      pending.erase(0, used);
      if (p.complete()) {
        HttpRequest r = p.take();
        out.requests.push_back(r.method + " " + r.path + "?" + r.query + "\n" + r.body);
        out.full.push_back(std::move(r));
      } else if (used == 0 && at >= bytes.size()) {
        break;  // needs bytes that never come
      }
    }
  } catch (const HttpError& e) {
    out.refusal = e.status();
  }
  return out;
}

void routes(const HttpRequest& r) {
  try {
    tfm::serve::parse_translate_request(r.body, 8);
  } catch (const HttpError&) {
  }
  try {
    tfm::serve::parse_libre_request(r, 8);
  } catch (const HttpError&) {
  }
  try {
    tfm::serve::parse_multipart(r.body, r.header("Content-Type").value_or(""));
  } catch (const HttpError&) {
  }
  const tfm::serve::HtmlPieces html = tfm::serve::split_html(r.body);
  std::vector<std::string> texts;
  for (size_t i : html.texts) texts.push_back(html.pieces[i]);
  const tfm::serve::HtmlPieces again = tfm::serve::split_html(tfm::serve::join_html(html, texts));
  std::vector<std::string> texts_again;
  for (size_t i : again.texts) texts_again.push_back(again.pieces[i]);
  fuzz::check(texts_again == texts, "fuzz_http_request", "HTML texts change when joined back");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  tfm::serve::HttpLimits limits;
  limits.max_body_bytes = kLimit;
  limits.body_limit_name = "--max-request-bytes";
  const Parsed whole = parse_all(bytes, limits, bytes.size() + 1);
  const Parsed pieces = parse_all(bytes, limits, 1 + data[0] % 13);
  fuzz::check(whole == pieces, "fuzz_http_request", "pieces parse otherwise than the whole");
  for (const HttpRequest& r : whole.full) {
    fuzz::check(r.body.size() <= kLimit, "fuzz_http_request", "a body over the limit");
    routes(r);
  }
  return 0;
}
