#include "tfm/data/unigram_model.h"

#include <algorithm>
#include <limits>

#include "tfm/core/check.h"
#include "tfm/data/byte_fallback.h"
#include "tfm/data/unicode.h"

namespace tfm {

namespace {
constexpr double kUnknownPenalty = 10.0;  // tokenizers' K_UNK_PENALTY
}

UnigramModel::UnigramModel(std::vector<std::pair<std::string, double>> pieces, int64_t unk_id,
                           bool byte_fallback)
    : pieces_(std::move(pieces)), unk_id_(unk_id), byte_fallback_(byte_fallback) {
  TFM_CHECK(!pieces_.empty()) << "Unigram model: the vocabulary is empty";
  TFM_CHECK(unk_id_ < static_cast<int64_t>(pieces_.size()))
      << "Unigram model: unk_id " << unk_id_ << " is outside the vocabulary of " << pieces_.size();
  min_score_ = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < pieces_.size(); ++i) {
    ids_[pieces_[i].first] = static_cast<int64_t>(i);  // a repeated piece keeps its last id
    max_piece_bytes_ = std::max(max_piece_bytes_, pieces_[i].first.size());
    min_score_ = std::min(min_score_, pieces_[i].second);
  }
}

int64_t UnigramModel::token_to_id(const std::string& token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

const std::string* UnigramModel::id_to_token(int64_t id) const {
  if (id < 0 || id >= size()) return nullptr;
  return &pieces_[static_cast<size_t>(id)].first;
}

// The best path's pieces as strings (a fused unknown run as its text).
std::vector<std::string> UnigramModel::segment(std::string_view text) const {
  struct Node {
    int64_t id = -1;
    double score = 0;
    int64_t start = -1;  // -1: no path ends here yet
  };
  const size_t n = text.size();
  const double unk_score = min_score_ - kUnknownPenalty;
  std::vector<Node> best(n + 1);
  std::string key;
  for (size_t start = 0; start < n;) {
    const double here = best[start].score;
    const size_t char_len = unicode::sequence_length(static_cast<unsigned char>(text[start]));
    bool has_single = false;
    // Every piece that starts here, shortest first (tokenizers' trie order): a later equal
    // score does not replace an earlier path.
    for (size_t len = 1; len <= max_piece_bytes_ && start + len <= n; ++len) {
      key.assign(text.substr(start, len));
      const auto it = ids_.find(key);
      if (it == ids_.end()) continue;
      Node& target = best[start + len];
      const double candidate = pieces_[static_cast<size_t>(it->second)].second + here;
      if (target.start < 0 || candidate > target.score)
        target = {it->second, candidate, static_cast<int64_t>(start)};
      if (len == char_len) has_single = true;
    }
    if (!has_single) {
      TFM_CHECK(unk_id_ >= 0) << "Unigram model: a character is not in the vocabulary and the "
                                 "model has no unknown token";
      Node& target = best[start + char_len];
      const double candidate = unk_score + here;
      if (target.start < 0 || candidate > target.score)
        target = {unk_id_, candidate, static_cast<int64_t>(start)};
    }
    start += char_len;
  }
  std::vector<std::string> out;
  std::string unknown;  // a fused run of unknown pieces, back to front
  for (size_t end = n; end > 0;) {
    const Node& node = best[end];
    const auto start = static_cast<size_t>(node.start);
    const std::string_view piece = text.substr(start, end - start);
    if (unk_id_ >= 0 && node.id == unk_id_) {
      unknown.insert(0, piece);
    } else {
      if (!unknown.empty()) out.push_back(std::move(unknown));
      unknown.clear();
      out.emplace_back(piece);
    }
    end = start;
  }
  if (!unknown.empty()) out.push_back(std::move(unknown));
  std::reverse(out.begin(), out.end());
  return out;
}

void UnigramModel::tokenize(std::string_view text, std::vector<int64_t>& ids) const {
  if (text.empty()) return;
  for (const std::string& piece : segment(text)) {
    if (const int64_t id = token_to_id(piece); id >= 0) {
      ids.push_back(id);
      continue;
    }
    if (byte_fallback_) {
      const std::vector<int64_t> bytes =
          byte_fallback_ids(piece, [this](const std::string& t) { return token_to_id(t); });
      if (!bytes.empty()) {
        ids.insert(ids.end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    TFM_CHECK(unk_id_ >= 0) << "Unigram model: \"" << piece << "\" has no id and no unknown token";
    ids.push_back(unk_id_);
  }
}

}  // namespace tfm
