#include "tfm/data/spm_unigram.h"

#include <algorithm>
#include <cfloat>

#include "tfm/core/check.h"
#include "tfm/data/unicode.h"

namespace tfm {

SpmUnigram::SpmUnigram(const SpmModelFile& model)
    : min_score_(FLT_MAX), max_score_(FLT_MIN), unk_id_(static_cast<int>(model.unk_id)) {
  using T = SpmModelFile::PieceType;
  for (size_t id = 0; id < model.pieces.size(); ++id) {
    const auto& p = model.pieces[id];
    if (p.type == T::normal) {
      min_score_ = std::min(min_score_, p.score);
      max_score_ = std::max(max_score_, p.score);
    }
    // The trie holds the normal, user-defined and unused pieces (the others are matched by id).
    Kind kind;
    if (p.type == T::normal)
      kind = Kind::normal;
    else if (p.type == T::user_defined)
      kind = Kind::user_defined;
    else if (p.type == T::unused)
      kind = Kind::unused;
    else
      continue;
    pieces_.emplace(p.piece, Entry{static_cast<int>(id), p.score, kind});
    max_piece_bytes_ = std::max(max_piece_bytes_, p.piece.size());
  }
}

std::vector<std::string> SpmUnigram::encode(std::string_view normalized) const {
  struct Node {
    int id = -1;
    float score = 0;
    int start = -1;
  };
  const size_t size = normalized.size();
  if (size == 0) return {};
  const float unk_score = min_score_ - 10.0f;
  std::vector<Node> best(size + 1);
  std::string key;
  for (size_t start = 0; start < size;) {
    const float here = best[start].score;
    bool has_single = false;
    const size_t mblen = std::min(
        unicode::sequence_length(static_cast<unsigned char>(normalized[start])), size - start);
    for (size_t len = 1; len <= max_piece_bytes_ && start + len <= size; ++len) {
      key.assign(normalized.substr(start, len));
      const auto it = pieces_.find(key);
      if (it == pieces_.end() || it->second.kind == Kind::unused) continue;
      Node& target = best[start + len];
      // SentencePiece's arithmetic, types included: a user-defined piece's bonus is a double.
      bool better;
      float candidate;
      if (it->second.kind == Kind::user_defined) {
        const double bonus = static_cast<double>(static_cast<float>(len) * max_score_) - 0.1;
        const double c = bonus + here;
        better = target.start == -1 || c > target.score;
        candidate = static_cast<float>(c);
      } else {
        candidate = it->second.score + here;
        better = target.start == -1 || candidate > target.score;
      }
      if (better) target = {it->second.id, candidate, static_cast<int>(start)};
      if (!has_single && len == mblen) has_single = true;
    }
    if (!has_single) {
      Node& target = best[start + mblen];
      const float candidate = unk_score + here;
      if (target.start == -1 || candidate > target.score)
        target = {unk_id_, candidate, static_cast<int>(start)};
    }
    start += mblen;
  }
  std::vector<std::pair<std::string, bool>> pieces;  // (piece, unknown)
  for (size_t end = size; end > 0;) {
    const Node& n = best[end];
    TFM_CHECK(n.start >= 0) << "SentencePiece unigram: no path through the text";
    pieces.emplace_back(std::string(normalized.substr(n.start, end - n.start)), n.id == unk_id_);
    end = static_cast<size_t>(n.start);
  }
  std::reverse(pieces.begin(), pieces.end());
  std::vector<std::string> out;
  bool last_unknown = false;
  for (auto& [piece, unknown] : pieces) {
    if (unknown && last_unknown)
      out.back() += piece;
    else
      out.push_back(std::move(piece));
    last_unknown = unknown;
  }
  return out;
}

}  // namespace tfm
