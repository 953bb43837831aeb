// HTTP/1.1 requests parsed from a byte stream as it arrives (RFC 9112): the request line, the
// header fields, and a body framed by Content-Length or chunked, decoded (content_decoding.h)
// and counted against the limit as it comes. It stops at the end of a request, so the bytes of
// a pipelined next one stay with the caller. Anything it cannot frame without guessing is an
// HttpError with the status RFC 9110 gives it (400, 413, 414, 415, 417, 431, 501, 505); a
// request that both Content-Length and Transfer-Encoding frame is refused (request smuggling).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tfm/serve/content_decoding.h"
#include "tfm/serve/http_message.h"

namespace tfm::serve {

struct HttpLimits {
  size_t max_body_bytes = 1 << 20;                 // decoded: after de-chunking and decompression
  std::string body_limit_name = "the body limit";  // what a 413 cites ("--max-request-bytes")
  size_t max_head_bytes = 64 * 1024;               // request line and header fields
  size_t max_target_bytes = 8 * 1024;              // the request target
  size_t max_header_fields = 100;
};

class RequestParser {
 public:
  explicit RequestParser(const HttpLimits& limits);
  ~RequestParser();

  // Consumes the start of `data` up to the end of the current request at most; returns how
  // many bytes it took. An HttpError for a request it refuses (the connection cannot go on).
  size_t feed(std::string_view data);
  bool started() const { return phase_ != Phase::start; }
  bool head_done() const { return phase_ == Phase::body || phase_ == Phase::complete; }
  bool complete() const { return phase_ == Phase::complete; }
  // The request asked for "100 Continue" before it sends its body (once its head is done).
  bool expects_continue() const { return expects_continue_; }
  // The request line and fields so far (the method and target once the head is done).
  const HttpRequest& request() const { return req_; }
  // The complete request; the parser starts over for the next one.
  HttpRequest take();

 private:
  enum class Phase : uint8_t { start, head, body, complete };
  enum class Chunk : uint8_t { size, data, data_end, trailers };

  size_t feed_head(std::string_view data);
  void parse_head(std::string_view head);
  void parse_request_line(std::string_view line);
  void parse_field(std::string_view line);
  void frame_body();
  size_t feed_length(std::string_view data);
  size_t feed_chunked(std::string_view data);
  void chunk_size_line(std::string_view line);
  void body_bytes(std::string_view data);
  void finish_body();

  const HttpLimits& limits_;
  Phase phase_ = Phase::start;
  std::string head_;
  size_t scanned_ = 0;  // head_ bytes already searched for the blank line
  HttpRequest req_;
  bool expects_continue_ = false;
  bool chunked_ = false;
  uint64_t remaining_ = 0;   // bytes left of the Content-Length, or of the current chunk
  uint64_t wire_bytes_ = 0;  // body bytes as sent (before decoding)
  Chunk chunk_ = Chunk::size;
  std::string line_;  // a chunk-size line or a trailer field being read
  size_t trailer_bytes_ = 0;
  std::unique_ptr<ContentDecoder> decoder_;
};

}  // namespace tfm::serve
