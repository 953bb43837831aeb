// What the Hugging Face import reads from a SentencePiece model file (the ModelProto protobuf),
// without SentencePiece or protobuf: the pieces with their scores and types, the model type, the
// unknown id and the normaliser's precompiled character map. Transformers' own conversion of a
// .model file (SentencePieceExtractor) reads the same fields.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tfm {

struct SpmModelFile {
  enum class PieceType : int {
    normal = 1,
    unknown = 2,
    control = 3,
    user_defined = 4,
    unused = 5,
    byte = 6
  };
  struct Piece {
    std::string piece;
    float score = 0;
    PieceType type = PieceType::normal;
  };
  std::vector<Piece> pieces;
  int model_type = 1;  // 1 unigram, 2 BPE, 3 word, 4 char
  int64_t unk_id = 0;
  std::string precompiled_charsmap;
  std::string normalizer_name;
};

SpmModelFile read_spm_model_file(const std::string& path);

}  // namespace tfm
