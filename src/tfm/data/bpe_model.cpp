#include "tfm/data/bpe_model.h"

#include <queue>

#include "tfm/core/check.h"
#include "tfm/data/byte_fallback.h"
#include "tfm/data/unicode.h"

namespace tfm {

BpeModel::BpeModel(std::unordered_map<std::string, int64_t> vocab, const Merges& merges,
                   Options options)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  int64_t top = -1;
  for (const auto& [token, id] : vocab_) {
    TFM_CHECK(id >= 0 && id < (int64_t{1} << 31))
        << "BPE vocabulary: token \"" << token << "\" has id " << id;
    top = std::max(top, id);
  }
  id_to_token_.resize(static_cast<size_t>(top + 1));
  has_id_.assign(static_cast<size_t>(top + 1), 0);
  for (const auto& [token, id] : vocab_) {
    id_to_token_[static_cast<size_t>(id)] = token;
    has_id_[static_cast<size_t>(id)] = 1;
  }
  const size_t prefix = options_.continuing_subword_prefix.size();
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const int64_t ia = token_to_id(a), ib = token_to_id(b);
    TFM_CHECK(ia >= 0 && ib >= 0) << "BPE merge " << rank + 1 << " (\"" << a << "\" \"" << b
                                  << "\") names a token that is not in the vocabulary";
    TFM_CHECK(b.size() >= prefix) << "BPE merge " << rank + 1 << ": \"" << b
                                  << "\" is shorter than the continuing-subword prefix";
    const std::string joined = a + b.substr(prefix);
    const int64_t result = token_to_id(joined);
    TFM_CHECK(result >= 0) << "BPE merge " << rank + 1 << ": \"" << joined
                           << "\" is not in the vocabulary";
    merges_[key(ia, ib)] = {static_cast<uint32_t>(rank), result};
  }
}

int64_t BpeModel::token_to_id(const std::string& token) const {
  const auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

const std::string* BpeModel::id_to_token(int64_t id) const {
  if (id < 0 || id >= static_cast<int64_t>(has_id_.size()) || !has_id_[static_cast<size_t>(id)])
    return nullptr;
  return &id_to_token_[static_cast<size_t>(id)];
}

// The word's characters as ids, with their byte lengths: unknown characters as <0xXX> byte
// tokens (byte_fallback, when all of a character's bytes have one) or the unknown token (runs of
// them fused with fuse_unk), or dropped when there is no unknown token.
std::vector<int64_t> BpeModel::initial_symbols(std::string_view word,
                                               std::vector<size_t>& lengths) const {
  std::vector<int64_t> symbols;
  const int64_t unk = options_.unk_token.empty() ? -1 : token_to_id(options_.unk_token);
  TFM_CHECK(options_.unk_token.empty() || unk >= 0)
      << "BPE: the unknown token \"" << options_.unk_token << "\" is not in the vocabulary";
  int64_t pending_unk_len = -1;  // a fused unknown run's byte length, -1 when none
  auto flush_unk = [&] {
    if (pending_unk_len < 0) return;
    symbols.push_back(unk);
    lengths.push_back(static_cast<size_t>(pending_unk_len));
    pending_unk_len = -1;
  };
  for (size_t i = 0; i < word.size();) {
    const size_t at = i;
    unicode::next(word, i);
    std::string s(word.substr(at, i - at));
    const size_t len = s.size();
    if (at > 0) s = options_.continuing_subword_prefix + s;
    if (i == word.size()) s += options_.end_of_word_suffix;
    if (const int64_t id = token_to_id(s); id >= 0) {
      flush_unk();
      symbols.push_back(id);
      lengths.push_back(len);
      continue;
    }
    if (options_.byte_fallback) {
      const std::vector<int64_t> bytes =
          byte_fallback_ids(s, [this](const std::string& t) { return token_to_id(t); });
      if (!bytes.empty()) {
        // tokenizers adds these without flushing a pending unknown run first.
        for (const int64_t id : bytes) {
          symbols.push_back(id);
          lengths.push_back(1);
        }
        continue;
      }
    }
    if (unk < 0) continue;
    if (pending_unk_len >= 0 && options_.fuse_unk) {
      pending_unk_len += static_cast<int64_t>(len);
    } else {
      flush_unk();
      pending_unk_len = static_cast<int64_t>(len);
    }
  }
  flush_unk();
  return symbols;
}

void BpeModel::tokenize(std::string_view word, std::vector<int64_t>& ids) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (const int64_t id = token_to_id(std::string(word)); id >= 0) {
      ids.push_back(id);
      return;
    }
  }
  std::vector<size_t> lengths;
  std::vector<int64_t> sym = initial_symbols(word, lengths);
  const auto n = static_cast<int64_t>(sym.size());
  // A doubly linked list over the symbols; a merged-away symbol gets length 0.
  std::vector<int64_t> prev(static_cast<size_t>(n)), next(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    prev[static_cast<size_t>(i)] = i - 1;
    next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    uint32_t rank;
    int64_t pos, result;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto push = [&](int64_t pos, int64_t right) {
    const auto it =
        merges_.find(key(sym[static_cast<size_t>(pos)], sym[static_cast<size_t>(right)]));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.result});
  };
  for (int64_t i = 0; i + 1 < n; ++i) push(i, i + 1);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    const auto p = static_cast<size_t>(top.pos);
    if (lengths[p] == 0 || next[p] < 0) continue;
    const auto r = static_cast<size_t>(next[p]);
    // A stale entry: the pair at this position is no longer the one it was pushed for.
    const auto it = merges_.find(key(sym[p], sym[r]));
    if (it == merges_.end() || it->second.result != top.result) continue;
    sym[p] = top.result;
    lengths[p] += lengths[r];
    lengths[r] = 0;
    next[p] = next[r];
    if (next[r] >= 0) prev[static_cast<size_t>(next[r])] = top.pos;
    if (prev[p] >= 0) push(prev[p], top.pos);
    if (next[p] >= 0) push(top.pos, next[p]);
  }
  for (int64_t i = 0; i < n; ++i)
    if (lengths[static_cast<size_t>(i)] != 0) ids.push_back(sym[static_cast<size_t>(i)]);
}

}  // namespace tfm
