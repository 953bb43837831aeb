// The server's HTTP/1.1 request parser (serve/http_parser.h) and content decoding: a request fed
// in pieces of every size parses as it does whole; pipelined requests split where they end;
// bodies counted against the limit after de-chunking and decompression (zlib's own compressor
// makes the compressed bodies); and each malformed or ambiguous framing refused with its status.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "tfm/serve/http_parser.h"

namespace tfm::serve {
namespace {

HttpLimits limits(size_t body = 1 << 20) {
  HttpLimits l;
  l.max_body_bytes = body;
  l.body_limit_name = "--max-request-bytes";
  return l;
}

// Feeds `bytes` in pieces of `step` until a request is complete; the request and the bytes left.
std::pair<HttpRequest, std::string> parse(const std::string& bytes, size_t step,
                                          const HttpLimits& l = limits()) {
  RequestParser p(l);
  std::string pending;
  size_t at = 0;
  while (!p.complete()) {
    EXPECT_LT(at, bytes.size()) << "the request never completed";
    if (at >= bytes.size()) break;
    pending += bytes.substr(at, step);
    at += step;
    pending.erase(0, p.feed(pending));
  }
  return {p.take(), pending + (at < bytes.size() ? bytes.substr(at) : "")};
}

// The status of the HttpError that `bytes` raises (0 when it parses or needs more).
int refusal(const std::string& bytes, const HttpLimits& l = limits()) {
  RequestParser p(l);
  try {
    p.feed(bytes);
  } catch (const HttpError& e) {
    return e.status();
  }
  return 0;
}

std::string compress(const std::string& data, int window_bits) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string chunked(const std::string& body, size_t size) {
  std::string out;
  for (size_t i = 0; i < body.size(); i += size) {
    const std::string piece = body.substr(i, size);
    char head[32];
    std::snprintf(head, sizeof head, "%zx;ext=1\r\n", piece.size());
    out += head + piece + "\r\n";
  }
  return out + "0\r\nX-Trailer: yes\r\n\r\n";
}

TEST(HttpParser, PiecesOfAnySizeParseAsTheWhole) {
  const std::string body = R"({"text": ["ein hund", "zwei katzen"]})";
  const std::string requests[] = {
      "POST /v1/translate?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body,
      "POST /v1/translate?x=1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" +
          chunked(body, 7),
      "POST /v1/translate?x=1 HTTP/1.1\r\nHost: a\r\nContent-Encoding: gzip\r\n"
      "Transfer-Encoding: chunked\r\n\r\n" +
          chunked(compress(body, 31), 5),
      "\r\nPOST /v1/translate?x=1 HTTP/1.1\nHost: a\nContent-Encoding: deflate\nContent-Length: " +
          std::to_string(compress(body, 15).size()) + "\n\n" + compress(body, 15),
  };
  for (const auto& bytes : requests) {
    for (size_t step : {size_t{1}, size_t{2}, size_t{3}, size_t{17}, bytes.size()}) {
      const auto [r, rest] = parse(bytes + "GET /next HTTP/1.1\r\n\r\n", step);
      EXPECT_EQ(r.method, "POST");
      EXPECT_EQ(r.path, "/v1/translate");
      EXPECT_EQ(r.query, "x=1");
      EXPECT_EQ(r.header("host").value_or(""), "a");
      EXPECT_EQ(r.body, body) << "step " << step << " of\n" << bytes;
      EXPECT_EQ(rest, "GET /next HTTP/1.1\r\n\r\n") << "step " << step;  // the next request
    }
  }
}

TEST(HttpParser, BodiesCountAgainstTheLimitOnceDecoded) {
  const std::string big(100'000, 'a');  // compresses to ~100 bytes
  const std::string gz = compress(big, 31);
  const std::string head = "POST / HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: ";
  EXPECT_EQ(refusal(head + std::to_string(gz.size()) + "\r\n\r\n" + gz, limits(99'999)), 413);
  for (size_t step : {size_t{1}, size_t{64}, size_t{1} << 20}) {  // 1 MiB: all at once
    const auto [r, rest] =
        parse(head + std::to_string(gz.size()) + "\r\n\r\n" + gz, step, limits(100'000));
    EXPECT_EQ(r.body, big) << "step " << step;
  }
  // Chunked: the sum of the chunks, and a chunk size alone over the limit.
  const std::string te = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(refusal(te + chunked(std::string(1001, 'x'), 100), limits(1000)), 413);
  EXPECT_EQ(refusal(te + "ffffffffff\r\n", limits(1000)), 413);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n", limits(1000)), 413);
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Length: 1000\r\n\r\n", limits(1000)), 0);
  // Two gzip members decode as one body.
  const std::string two = compress("ab", 31) + compress("cd", 31);
  EXPECT_EQ(parse(head + std::to_string(two.size()) + "\r\n\r\n" + two, 3).first.body, "abcd");
}

TEST(HttpParser, AmbiguousOrMalformedRequestsAreRefused) {
  const std::pair<std::string, int> cases[] = {
      {"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 3, 4\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: -3\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Encoding: zstd\r\n\r\n", 415},
      {"POST / HTTP/1.1\r\nContent-Length: 3\r\nExpect: something\r\n\r\n", 417},
      {"GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nBad Name: a\r\n\r\n", 400},
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET / HTTP/1.x\r\n\r\n", 400},
      {"FETCH / HTTP/1.1\r\n\r\n", 501},
      {"GET relative HTTP/1.1\r\n\r\n", 400},
      {"GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n", 414},
      {"GET / HTTP/1.1\r\nX: " + std::string(70'000, 'a') + "\r\n\r\n", 431},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nq\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nabcd", 400},
  };
  for (const auto& [bytes, status] : cases)
    EXPECT_EQ(refusal(bytes), status) << bytes.substr(0, 80);
  // Too many header fields, and the absolute form of the target.
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) many += "X-" + std::to_string(i) + ": a\r\n";
  EXPECT_EQ(refusal(many + "\r\n"), 431);
  EXPECT_EQ(parse("GET http://h:1/health?a HTTP/1.1\r\n\r\n", 5).first.path, "/health");
}

TEST(HttpParser, KeepAliveFollowsTheVersionAndConnection) {
  EXPECT_TRUE(parse("GET / HTTP/1.1\r\n\r\n", 4).first.keep_alive());
  EXPECT_FALSE(parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 4).first.keep_alive());
  EXPECT_FALSE(parse("GET / HTTP/1.0\r\n\r\n", 4).first.keep_alive());
  EXPECT_TRUE(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 4).first.keep_alive());
}

}  // namespace
}  // namespace tfm::serve
