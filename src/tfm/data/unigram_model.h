// A unigram language-model segmentation of one pre-tokenized piece, as the `tokenizers`
// library's Unigram model does it (Transformers' mBART and mBART-50 tokenizers): the Viterbi
// path of highest summed piece score over every vocabulary piece that matches, a character no
// piece covers costing (lowest score - 10) as the unknown token, runs of unknown characters fused
// into one unknown token.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tfm {

class UnigramModel {
 public:
  // pieces[i] is id i; unk_id -1 = none (an uncovered character is then an error, as in
  // tokenizers).
  UnigramModel(std::vector<std::pair<std::string, double>> pieces, int64_t unk_id,
               bool byte_fallback);

  void tokenize(std::string_view text, std::vector<int64_t>& ids) const;
  int64_t token_to_id(const std::string& token) const;  // -1 when absent
  const std::string* id_to_token(int64_t id) const;     // nullptr outside the vocabulary
  int64_t size() const { return static_cast<int64_t>(pieces_.size()); }

 private:
  std::vector<std::string> segment(std::string_view text) const;

  std::vector<std::pair<std::string, double>> pieces_;
  std::unordered_map<std::string, int64_t> ids_;
  size_t max_piece_bytes_ = 0;
  double min_score_ = 0;
  int64_t unk_id_;
  bool byte_fallback_;
};

}  // namespace tfm
