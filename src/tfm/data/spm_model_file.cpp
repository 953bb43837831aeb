#include "tfm/data/spm_model_file.h"

#include <bit>
#include <string_view>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"

namespace tfm {

namespace {

// A protobuf message's fields in wire format: varints, fixed32/64 and length-delimited bytes.
class Wire {
 public:
  Wire(std::string_view data, const std::string& path) : data_(data), path_(path) {}
  bool done() const { return pos_ >= data_.size(); }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      TFM_CHECK(pos_ < data_.size()) << path_ << ": truncated SentencePiece model";
      const auto b = static_cast<unsigned char>(data_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    TFM_FAIL() << path_ << ": malformed varint in the SentencePiece model";
    return 0;
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    TFM_CHECK(n <= data_.size() - pos_) << path_ << ": truncated SentencePiece model";
    const std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  uint32_t fixed32() {
    TFM_CHECK(data_.size() - pos_ >= 4) << path_ << ": truncated SentencePiece model";
    uint32_t v = 0;  // little-endian
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(data_[pos_ + i]);
    pos_ += 4;
    return v;
  }
  void skip(int wire_type) {
    switch (wire_type) {
      case 0:
        varint();
        break;
      case 1:
        TFM_CHECK(data_.size() - pos_ >= 8) << path_ << ": truncated";
        pos_ += 8;
        break;
      case 2:
        bytes();
        break;
      case 5:
        fixed32();
        break;
      default:
        TFM_FAIL() << path_ << ": protobuf wire type " << wire_type
                   << " is not a SentencePiece model's";
    }
  }

 private:
  std::string_view data_;
  const std::string& path_;
  size_t pos_ = 0;
};

SpmModelFile::Piece read_piece(std::string_view data, const std::string& path) {
  SpmModelFile::Piece p;
  Wire w(data, path);
  while (!w.done()) {
    const uint64_t tag = w.varint();
    const auto field = tag >> 3;
    const int type = static_cast<int>(tag & 7);
    if (field == 1 && type == 2) {
      p.piece = std::string(w.bytes());
    } else if (field == 2 && type == 5) {
      p.score = std::bit_cast<float>(w.fixed32());
    } else if (field == 3 && type == 0) {
      p.type = static_cast<SpmModelFile::PieceType>(w.varint());
    } else {
      w.skip(type);
    }
  }
  return p;
}

}  // namespace

SpmModelFile read_spm_model_file(const std::string& path) {
  const std::string data = read_file(path);
  SpmModelFile m;
  Wire w(data, path);
  while (!w.done()) {
    const uint64_t tag = w.varint();
    const auto field = tag >> 3;
    const int type = static_cast<int>(tag & 7);
    if (type != 2) {
      w.skip(type);
      continue;
    }
    const std::string_view body = w.bytes();
    Wire sub(body, path);
    if (field == 1) {
      m.pieces.push_back(read_piece(body, path));
    } else if (field == 2) {  // TrainerSpec
      while (!sub.done()) {
        const uint64_t t = sub.varint();
        if ((t >> 3) == 3 && (t & 7) == 0)
          m.model_type = static_cast<int>(sub.varint());
        else if ((t >> 3) == 40 && (t & 7) == 0)
          m.unk_id = static_cast<int32_t>(sub.varint());
        else
          sub.skip(static_cast<int>(t & 7));
      }
    } else if (field == 3) {  // NormalizerSpec
      while (!sub.done()) {
        const uint64_t t = sub.varint();
        if ((t >> 3) == 1 && (t & 7) == 2)
          m.normalizer_name = std::string(sub.bytes());
        else if ((t >> 3) == 2 && (t & 7) == 2)
          m.precompiled_charsmap = std::string(sub.bytes());
        else
          sub.skip(static_cast<int>(t & 7));
      }
    }
  }
  TFM_CHECK(!m.pieces.empty()) << path << " is not a SentencePiece model (no pieces)";
  return m;
}

}  // namespace tfm
