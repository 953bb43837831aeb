#include "tfm/serve/content_decoding.h"

#include <brotli/decode.h>
#include <zlib.h>

#include <cstdint>
#include <string>

#include "tfm/serve/http_message.h"

namespace tfm::serve {

namespace {

// Output is produced in pieces of this size and counted before it is appended, so a body never
// holds more than the limit plus nothing: the piece is dropped when it would pass the limit.
constexpr size_t kPiece = 16 * 1024;

void append_counted(std::string& out, const char* data, size_t n, size_t limit,
                    const std::string& limit_name) {
  if (n > limit - out.size()) throw_body_too_large(limit, limit_name, "the decompressed body");
  out.append(data, n);
}

class Identity final : public ContentDecoder {
 public:
  Identity(size_t limit, std::string limit_name) : limit_(limit), name_(std::move(limit_name)) {}
  void decode(std::string_view in, std::string& out) override {
    if (in.size() > limit_ - out.size()) throw_body_too_large(limit_, name_);
    out.append(in);
  }
  void finish(std::string&) override {}

 private:
  size_t limit_;
  std::string name_;
};

// gzip (one member or several, concatenated) and deflate (the zlib format, as RFC 9110 has it).
class Zlib final : public ContentDecoder {
 public:
  Zlib(bool gzip, size_t limit, std::string limit_name)
      : gzip_(gzip), limit_(limit), name_(std::move(limit_name)) {
    if (inflateInit2(&z_, gzip ? 15 + 16 : 15) != Z_OK)
      throw HttpError(500, "cannot start the zlib decoder");
  }
  ~Zlib() override { inflateEnd(&z_); }

  void decode(std::string_view in, std::string& out) override {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    char piece[kPiece];
    for (;;) {
      if (ended_ && z_.avail_in == 0) return;
      if (ended_) {
        // Another gzip member may follow; anything else after the end is corrupt.
        if (!gzip_) fail("data after the end of the deflate stream");
        inflateReset(&z_);
        ended_ = false;
      }
      z_.next_out = reinterpret_cast<Bytef*>(piece);
      z_.avail_out = kPiece;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        fail(z_.msg ? z_.msg : "corrupt data");
      append_counted(out, piece, kPiece - z_.avail_out, limit_, name_);
      if (rc == Z_STREAM_END) ended_ = true;
      // A piece not filled: zlib has nothing more to give until more input comes.
      if (!ended_ && z_.avail_out != 0) return;
    }
  }
  void finish(std::string& out) override {
    decode({}, out);
    if (!ended_) fail("the stream ends early");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw HttpError(400, std::string("the ") + (gzip_ ? "gzip" : "deflate") +
                             " request body cannot be decoded: " + why);
  }

  z_stream z_{};
  bool gzip_;
  bool ended_ = false;
  size_t limit_;
  std::string name_;
};

class Brotli final : public ContentDecoder {
 public:
  Brotli(size_t limit, std::string limit_name)
      : state_(BrotliDecoderCreateInstance(nullptr, nullptr, nullptr)),
        limit_(limit),
        name_(std::move(limit_name)) {
    if (!state_) throw HttpError(500, "cannot start the Brotli decoder");
  }
  ~Brotli() override { BrotliDecoderDestroyInstance(state_); }

  void decode(std::string_view in, std::string& out) override {
    auto next_in = reinterpret_cast<const uint8_t*>(in.data());
    size_t avail_in = in.size();
    uint8_t piece[kPiece];
    for (;;) {
      uint8_t* next_out = piece;
      size_t avail_out = kPiece;
      const BrotliDecoderResult rc = BrotliDecoderDecompressStream(state_, &avail_in, &next_in,
                                                                   &avail_out, &next_out, nullptr);
      if (rc == BROTLI_DECODER_RESULT_ERROR)
        throw HttpError(400, std::string("the br request body cannot be decoded: ") +
                                 BrotliDecoderErrorString(BrotliDecoderGetErrorCode(state_)));
      append_counted(out, reinterpret_cast<const char*>(piece), kPiece - avail_out, limit_, name_);
      if (rc == BROTLI_DECODER_RESULT_SUCCESS && avail_in > 0)
        throw HttpError(400, "the br request body has data after the end of its stream");
      if (rc != BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT) return;
    }
  }
  void finish(std::string& out) override {
    decode({}, out);
    if (!BrotliDecoderIsFinished(state_))
      throw HttpError(400, "the br request body cannot be decoded: the stream ends early");
  }

 private:
  BrotliDecoderState* state_;
  size_t limit_;
  std::string name_;
};

}  // namespace

void throw_body_too_large(size_t limit, const std::string& limit_name, const char* what) {
  throw HttpError(413, std::string(what) + " is larger than " + std::to_string(limit) + " bytes (" +
                           limit_name + ")");
}

std::unique_ptr<ContentDecoder> make_content_decoder(std::string_view encoding, size_t limit,
                                                     const std::string& limit_name) {
  if (encoding.empty() || iequals(encoding, "identity"))
    return std::make_unique<Identity>(limit, limit_name);
  if (iequals(encoding, "gzip") || iequals(encoding, "x-gzip"))
    return std::make_unique<Zlib>(true, limit, limit_name);
  if (iequals(encoding, "deflate")) return std::make_unique<Zlib>(false, limit, limit_name);
  if (iequals(encoding, "br")) return std::make_unique<Brotli>(limit, limit_name);
  throw HttpError(415, "Content-Encoding '" + std::string(encoding) +
                           "' is not supported (gzip, deflate, br or identity)");
}

}  // namespace tfm::serve
