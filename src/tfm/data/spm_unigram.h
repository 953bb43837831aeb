// SentencePiece's unigram segmentation as version 0.2 runs it (its "optimized" Viterbi, on
// float scores): the library Debian ships (0.1.97, which tfm links) breaks ties between equal
// paths the other way ("lll" as "ll l" where 0.2 gives "l ll"), and Transformers runs 0.2.
// MarianTokenizer's SentencePiece models are unigram ones; tfm normalises with the library and
// segments with this.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tfm/data/spm_model_file.h"

namespace tfm {

class SpmUnigram {
 public:
  explicit SpmUnigram(const SpmModelFile& model);
  // The pieces of an already normalised text (SentencePiece's escaped "▁" form), runs of unknown
  // pieces joined into one, as SentencePieceProcessor::Encode returns them.
  std::vector<std::string> encode(std::string_view normalized) const;

 private:
  enum class Kind : char { normal, user_defined, unused };
  struct Entry {
    int id;
    float score;
    Kind kind;
  };
  std::unordered_map<std::string, Entry> pieces_;
  size_t max_piece_bytes_ = 0;
  float min_score_, max_score_;
  int unk_id_;
};

}  // namespace tfm
