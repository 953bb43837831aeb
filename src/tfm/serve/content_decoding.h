// A request body's Content-Encoding undone as its bytes arrive (gzip, deflate, br; zlib and
// Brotli's streaming decoders), each output piece counted against the body limit before it is
// kept: a 200 KB gzip of 200 MB is refused after the limit's worth of output, never decoded
// whole.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace tfm::serve {

class ContentDecoder {
 public:
  virtual ~ContentDecoder() = default;
  // Decodes `in` and appends the output to `out`; an HttpError 413 once `out` would pass
  // `limit` bytes (the message names `limit_name`), 400 for a corrupt stream.
  virtual void decode(std::string_view in, std::string& out) = 0;
  // The body ended: an HttpError 400 when the stream is incomplete.
  virtual void finish(std::string& out) = 0;
};

// The decoder of a Content-Encoding header's value (identity when empty); an HttpError 415 for
// one this server cannot decode. `limit` bytes of output at most.
std::unique_ptr<ContentDecoder> make_content_decoder(std::string_view encoding, size_t limit,
                                                     const std::string& limit_name);

// The 413 of a body over `limit` bytes, its message naming `limit_name` (one wording for every
// place that counts a body).
[[noreturn]] void throw_body_too_large(size_t limit, const std::string& limit_name,
                                       const char* what = "the request body");

}  // namespace tfm::serve
