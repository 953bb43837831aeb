#include "tfm/serve/http_parser.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace tfm::serve {

namespace {

constexpr size_t kMaxChunkLine = 1024;  // a chunk's size and its extensions
// Compressed bodies may be a little larger than what they decode to (incompressible data).
constexpr uint64_t kWireSlack = 64 * 1024;

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c);
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_token_char);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Takes bytes of `data` from `pos` into `line` up to and including a '\n'; true when the line
// is complete (then without its "\r\n" or "\n"). `limit` bounds the line.
bool take_line(std::string_view data, size_t& pos, std::string& line, size_t limit, int status,
               const char* what) {
  const size_t nl = data.find('\n', pos);
  const size_t end = nl == std::string_view::npos ? data.size() : nl;
  if (line.size() + (end - pos) > limit)
    throw HttpError(status,
                    std::string(what) + " is longer than " + std::to_string(limit) + " bytes");
  line.append(data.substr(pos, end - pos));
  pos = nl == std::string_view::npos ? data.size() : nl + 1;
  if (nl == std::string_view::npos) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

bool known_method(std::string_view m) {
  for (const char* k : {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})
    if (m == k) return true;
  return false;
}

}  // namespace

RequestParser::RequestParser(const HttpLimits& limits) : limits_(limits) {}
RequestParser::~RequestParser() = default;

size_t RequestParser::feed(std::string_view data) {
  size_t used = 0;
  if (phase_ == Phase::start || phase_ == Phase::head) used = feed_head(data);
  if (phase_ == Phase::body) {
    const std::string_view rest = data.substr(used);
    used += chunked_ ? feed_chunked(rest) : feed_length(rest);
  }
  return used;
}

size_t RequestParser::feed_head(std::string_view data) {
  size_t skipped = 0;
  if (phase_ == Phase::start) {
    // Blank lines before a request line are ignored (RFC 9112, 2.2).
    while (skipped < data.size() && (data[skipped] == '\r' || data[skipped] == '\n')) ++skipped;
    if (skipped == data.size()) return skipped;
    phase_ = Phase::head;
  }
  const size_t before = head_.size();
  head_.append(data.substr(skipped));
  // The head ends at a blank line: "\n\n" or "\n\r\n".
  size_t end = std::string::npos;
  for (size_t i = head_.find('\n', scanned_); i != std::string::npos; i = head_.find('\n', i + 1)) {
    if (i + 1 < head_.size() && head_[i + 1] == '\n') end = i + 2;
    if (i + 2 < head_.size() && head_[i + 1] == '\r' && head_[i + 2] == '\n') end = i + 3;
    if (end != std::string::npos) break;
  }
  if (end == std::string::npos) {
    scanned_ = head_.size() > 3 ? head_.size() - 3 : 0;
    const bool line_done = head_.find('\n') != std::string::npos;
    if (!line_done && head_.size() > limits_.max_target_bytes + 32)
      throw HttpError(414, "the request target is longer than " +
                               std::to_string(limits_.max_target_bytes) + " bytes");
    if (head_.size() > limits_.max_head_bytes)
      throw HttpError(431, "the request's header fields are longer than " +
                               std::to_string(limits_.max_head_bytes) + " bytes");
    return data.size();
  }
  if (end > limits_.max_head_bytes)
    throw HttpError(431, "the request's header fields are longer than " +
                             std::to_string(limits_.max_head_bytes) + " bytes");
  head_.resize(end);
  parse_head(head_);
  frame_body();
  return skipped + (end - before);
}

void RequestParser::parse_head(std::string_view head) {
  bool first = true;
  while (!head.empty()) {
    const size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    if (first)
      parse_request_line(line);
    else
      parse_field(line);
    first = false;
  }
}

void RequestParser::parse_request_line(std::string_view line) {
  const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp1 == sp2)
    throw HttpError(400, "malformed request line (want METHOD TARGET HTTP/1.1)");
  const std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method) || target.empty() || target.find(' ') != std::string_view::npos)
    throw HttpError(400, "malformed request line (want METHOD TARGET HTTP/1.1)");
  if (target.size() > limits_.max_target_bytes)
    throw HttpError(414, "the request target is longer than " +
                             std::to_string(limits_.max_target_bytes) + " bytes");
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !std::isdigit(version[5]) ||
      version[6] != '.' || !std::isdigit(version[7]))
    throw HttpError(400, "malformed HTTP version '" + std::string(version) + "'");
  if (version[5] != '1')
    throw HttpError(505, "HTTP/" + std::string(version.substr(5)) +
                             " is not supported: this server speaks HTTP/1.1 and HTTP/1.0");
  if (!known_method(method))
    throw HttpError(501, "method " + std::string(method) + " is not implemented");
  // The absolute form (what a client sends to a proxy) is accepted for its path.
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.substr(0, scheme.size()) == scheme) {
      const size_t slash = target.find('/', scheme.size());
      target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
    }
  }
  if (target.front() != '/' && !(target == "*" && method == "OPTIONS"))
    throw HttpError(400, "the request target must be a path (got '" + std::string(target) + "')");
  req_.method = method;
  req_.target = target;
  const size_t q = target.find('?');
  req_.path = target.substr(0, q);
  req_.query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
  req_.minor_version = version[7] - '0';
}

void RequestParser::parse_field(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t')
    throw HttpError(400, "obsolete line folding in a header field");
  const size_t colon = line.find(':');
  const std::string_view name = line.substr(0, colon);
  if (colon == std::string_view::npos || !is_token(name))
    throw HttpError(400, "malformed header field '" + std::string(line.substr(0, 64)) + "'");
  if (req_.headers.size() >= limits_.max_header_fields)
    throw HttpError(431,
                    "more than " + std::to_string(limits_.max_header_fields) + " header fields");
  req_.headers.emplace_back(std::string(name), std::string(trim(line.substr(colon + 1))));
}

void RequestParser::frame_body() {
  bool has_length = false;
  uint64_t length = 0;
  for (const auto& [name, value] : req_.headers) {
    if (!iequals(name, "Content-Length")) continue;
    // "5", or a list of equal values ("5, 5") as some clients merge repeated fields.
    std::string_view rest = value;
    while (true) {
      const size_t comma = rest.find(',');
      const std::string_view item = trim(rest.substr(0, comma));
      if (item.empty() || item.size() > 18 ||
          !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw HttpError(400, "malformed Content-Length '" + value + "'");
      const uint64_t n = std::stoull(std::string(item));
      if (has_length && n != length) throw HttpError(400, "conflicting Content-Length values");
      has_length = true;
      length = n;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  const auto te = req_.header("Transfer-Encoding");
  if (te && has_length)
    throw HttpError(400, "a request with both Content-Length and Transfer-Encoding");
  if (te && !iequals(trim(*te), "chunked"))
    throw HttpError(501, "Transfer-Encoding '" + std::string(*te) + "' is not supported (chunked)");
  chunked_ = te.has_value();
  if (const auto expect = req_.header("Expect")) {
    if (!iequals(trim(*expect), "100-continue"))
      throw HttpError(417, "Expect '" + std::string(*expect) + "' is not supported");
    expects_continue_ = chunked_ || length > 0;
  }
  if (!chunked_ && length == 0) {
    phase_ = Phase::complete;
    return;
  }
  const auto encoding = req_.header("Content-Encoding");
  const size_t limit = limits_.max_body_bytes;
  decoder_ = make_content_decoder(encoding ? trim(*encoding) : "", limit, limits_.body_limit_name);
  // Refused before a byte of the body is read: it cannot fit.
  if (has_length && length > limit + (encoding ? kWireSlack : 0))
    throw_body_too_large(limit, limits_.body_limit_name);
  remaining_ = length;
  phase_ = Phase::body;
}

void RequestParser::body_bytes(std::string_view data) {
  wire_bytes_ += data.size();
  if (wire_bytes_ > limits_.max_body_bytes + kWireSlack)
    throw_body_too_large(limits_.max_body_bytes, limits_.body_limit_name);
  decoder_->decode(data, req_.body);
}

void RequestParser::finish_body() {
  decoder_->finish(req_.body);
  decoder_.reset();
  phase_ = Phase::complete;
}

size_t RequestParser::feed_length(std::string_view data) {
  const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, data.size()));
  body_bytes(data.substr(0, take));
  remaining_ -= take;
  if (remaining_ == 0) finish_body();
  return take;
}

void RequestParser::chunk_size_line(std::string_view line) {
  const std::string_view size = trim(line.substr(0, line.find(';')));
  if (size.empty() || !std::all_of(size.begin(), size.end(), [](char c) {
        return std::isxdigit(static_cast<unsigned char>(c));
      }))
    throw HttpError(400, "malformed chunk size '" + std::string(line.substr(0, 32)) + "'");
  if (size.size() > 15) throw_body_too_large(limits_.max_body_bytes, limits_.body_limit_name);
  remaining_ = std::stoull(std::string(size), nullptr, 16);
  if (wire_bytes_ + remaining_ > limits_.max_body_bytes + kWireSlack)
    throw_body_too_large(limits_.max_body_bytes, limits_.body_limit_name);
  chunk_ = remaining_ == 0 ? Chunk::trailers : Chunk::data;
}

size_t RequestParser::feed_chunked(std::string_view data) {
  size_t pos = 0;
  while (pos < data.size() && phase_ == Phase::body) {
    switch (chunk_) {
      case Chunk::size:
        if (!take_line(data, pos, line_, kMaxChunkLine, 400, "a chunk-size line")) break;
        chunk_size_line(line_);
        line_.clear();
        break;
      case Chunk::data: {
        const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, data.size() - pos));
        body_bytes(data.substr(pos, take));
        pos += take;
        remaining_ -= take;
        if (remaining_ == 0) chunk_ = Chunk::data_end;
        break;
      }
      case Chunk::data_end: {  // "\r\n" (or "\n") after the data, nothing else
        const char c = data[pos++];
        if (c == '\r' && line_.empty()) {
          line_.assign(1, '\r');
        } else if (c == '\n') {
          line_.clear();
          chunk_ = Chunk::size;
        } else {
          throw HttpError(400, "a chunk's data is longer than its size");
        }
        break;
      }
      case Chunk::trailers: {
        const size_t before = pos;
        const size_t room =
            limits_.max_head_bytes - std::min(trailer_bytes_, limits_.max_head_bytes);
        const bool done = take_line(data, pos, line_, room, 431, "the trailer fields");
        trailer_bytes_ += pos - before;
        if (!done) break;
        if (line_.empty()) finish_body();  // the trailer fields are read and ignored
        line_.clear();
        break;
      }
    }
  }
  return pos;
}

HttpRequest RequestParser::take() {
  HttpRequest out = std::move(req_);
  req_ = HttpRequest{};
  phase_ = Phase::start;
  head_.clear();
  scanned_ = 0;
  expects_continue_ = chunked_ = false;
  remaining_ = wire_bytes_ = 0;
  chunk_ = Chunk::size;
  line_.clear();
  trailer_bytes_ = 0;
  decoder_.reset();
  return out;
}

}  // namespace tfm::serve
