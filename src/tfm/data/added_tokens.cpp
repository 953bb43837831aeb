#include "tfm/data/added_tokens.h"

#include <algorithm>
#include <map>
#include <memory>

#include "tfm/data/unicode.h"

namespace tfm {

// Transformers' Python Trie: nodes keyed by code point.
struct AddedTokenSplitter::TrieNode {
  std::map<char32_t, std::unique_ptr<TrieNode>> next;
  bool terminal = false;
  const TrieNode* child(char32_t c) const {
    const auto it = next.find(c);
    return it == next.end() ? nullptr : it->second.get();
  }
};

namespace {

// The last code point of s (s not empty, valid UTF-8).
char32_t last_char(std::string_view s) {
  size_t i = unicode::previous(s, s.size());
  return unicode::next(s, i);
}

// Where the whitespace run at the end of s begins (tokenizers' `\s*$`), and the length of the
// one at its start (`^\s*`).
size_t trailing_space_start(std::string_view s) {
  return unicode::trim(s, unicode::rust_space, false, true).size();
}
size_t leading_space_length(std::string_view s) {
  return s.size() - unicode::trim(s, unicode::rust_space, true, false).size();
}

// Python's str.lstrip / rstrip (Python's whitespace).
std::string py_lstrip(const std::string& s) {
  return std::string(unicode::trim(s, unicode::py_space, true, false));
}
std::string py_rstrip(const std::string& s) {
  return std::string(unicode::trim(s, unicode::py_space, false, true));
}

bool is_word(char32_t c) {
  return unicode::has(c, unicode::rust_word);
}

}  // namespace

AddedTokenSplitter::AddedTokenSplitter(std::vector<AddedToken> tokens, Style style,
                                       std::function<std::string(std::string_view)> normalize)
    : tokens_(std::move(tokens)), style_(style), normalize_(std::move(normalize)) {
  for (const AddedToken& t : tokens_) {
    if (t.content.empty()) continue;
    if (style_ == Style::fast && t.normalized) {
      normalized_.push_back(&t);
      normalized_patterns_.push_back(normalize_ ? normalize_(t.content) : t.content);
    } else {
      raw_.push_back(&t);
      raw_patterns_.push_back(t.content);
    }
  }
  if (style_ == Style::slow) {
    trie_ = std::make_unique<TrieNode>();
    for (const AddedToken* t : raw_) {
      TrieNode* node = trie_.get();
      for (const char32_t c : unicode::decode(t->content)) {
        auto& slot = node->next[c];
        if (!slot) slot = std::make_unique<TrieNode>();
        node = slot.get();
      }
      node->terminal = true;
    }
  }
}

AddedTokenSplitter::~AddedTokenSplitter() = default;

std::vector<TextPiece> AddedTokenSplitter::split(std::string_view text) const {
  if (style_ == Style::slow) return split_slow(text);
  std::vector<TextPiece> out;
  split_fast(text, raw_, raw_patterns_, /*normalize_rest=*/true, out);
  return out;
}

std::vector<AddedTokenSplitter::Match> AddedTokenSplitter::find_fast(
    std::string_view s, const std::vector<const AddedToken*>& candidates,
    const std::vector<std::string>& patterns) const {
  std::vector<Match> matches;
  size_t from = 0;      // where the next search starts (the previous raw match's end)
  size_t taken_to = 0;  // the end of the last kept match, lstrip/rstrip included
  while (from < s.size()) {
    // Leftmost, then longest.
    size_t best_at = s.size(), best_len = 0;
    const AddedToken* best = nullptr;
    for (size_t at = from; at < s.size() && best == nullptr; ++at) {
      for (size_t k = 0; k < candidates.size(); ++k) {
        const std::string& p = patterns[k];
        if (p.empty() || p.size() <= best_len || s.size() - at < p.size()) continue;
        if (s.compare(at, p.size(), p) == 0) {
          best_at = at;
          best_len = p.size();
          best = candidates[k];
        }
      }
    }
    if (best == nullptr) break;
    size_t start = best_at, stop = best_at + best_len;
    from = stop;
    if (best->single_word) {
      const bool start_space = start == 0 || !is_word(last_char(s.substr(0, start)));
      size_t j = stop;
      const bool stop_space = stop == s.size() || !is_word(unicode::next(s, j));
      if (!start_space || !stop_space) continue;
    }
    if (best->lstrip) start = std::max(trailing_space_start(s.substr(0, start)), taken_to);
    if (best->rstrip) stop += leading_space_length(s.substr(stop));
    matches.push_back({start, stop, best});
    taken_to = stop;
  }
  return matches;
}

void AddedTokenSplitter::split_fast(std::string_view s,
                                    const std::vector<const AddedToken*>& candidates,
                                    const std::vector<std::string>& patterns, bool normalize_rest,
                                    std::vector<TextPiece>& out) const {
  auto text = [&](std::string_view piece) {
    if (!normalize_rest) {
      if (!piece.empty()) out.push_back({std::string(piece), -1});
      return;
    }
    // The second pass: the normalised remainder, cut on the normalized tokens.
    const std::string n = normalize_ ? normalize_(piece) : std::string(piece);
    split_fast(n, normalized_, normalized_patterns_, /*normalize_rest=*/false, out);
  };
  size_t offset = 0;
  for (const Match& m : find_fast(s, candidates, patterns)) {
    if (offset < m.start) text(s.substr(offset, m.start - offset));
    out.push_back({std::string(s.substr(m.start, m.end - m.start)), m.token->id});
    offset = m.end;
  }
  if (offset < s.size() || (offset == 0 && s.empty())) text(s.substr(offset));
}

namespace {

using TrieNode = AddedTokenSplitter::TrieNode;

// Cut points of `text` (code points) as Trie.split computes them: at each position the live
// partial matches advance; once the earliest live match is complete, the earliest-starting
// complete match among the live ones is taken, extended to its longest, and all state is reset.
std::vector<size_t> trie_offsets(const TrieNode& root, const std::vector<char32_t>& text) {
  struct State {
    size_t start;
    const TrieNode* node;
  };
  std::vector<State> states;
  std::vector<size_t> offsets{0};
  size_t skip = 0;
  const size_t n = text.size();
  for (size_t current = 0; current < n; ++current) {
    if (skip != 0 && current < skip) continue;
    const char32_t ch = text[current];
    std::vector<size_t> dead;
    bool reset = false;
    for (size_t si = 0; si < states.size(); ++si) {
      State& st = states[si];
      if (st.node->terminal) {
        size_t start = st.start, end = current;
        for (const State& look : states) {
          if (look.start > start) break;
          size_t ahead = look.start < start ? current + 1 : current;
          end = ahead;
          const TrieNode* node = look.node;
          if (node->terminal) {
            start = look.start;
            end = skip = ahead;
          }
          while (ahead < n) {
            const TrieNode* c = node->child(text[ahead]);
            if (c == nullptr) break;
            node = c;
            ++ahead;
            if (node->terminal) {
              start = look.start;
              end = skip = ahead;
            }
          }
        }
        offsets.push_back(start);
        offsets.push_back(end);
        reset = true;
        break;
      }
      if (const TrieNode* c = st.node->child(ch))
        st.node = c;
      else
        dead.push_back(st.start);
    }
    if (reset) {
      states.clear();
    } else {
      std::erase_if(states, [&](const State& s) {
        return std::find(dead.begin(), dead.end(), s.start) != dead.end();
      });
    }
    if (current >= skip)
      if (const TrieNode* c = root.child(ch)) states.push_back({current, c});
  }
  for (const State& st : states) {
    if (st.node->terminal) {
      offsets.push_back(st.start);
      offsets.push_back(n);
      break;
    }
  }
  offsets.push_back(n);
  return offsets;
}

std::string encode_range(const std::vector<char32_t>& text, size_t from, size_t to) {
  std::string s;
  for (size_t i = from; i < to; ++i) unicode::append(s, text[i]);
  return s;
}

}  // namespace

std::vector<TextPiece> AddedTokenSplitter::split_slow(std::string_view text) const {
  const std::vector<char32_t> chars = unicode::decode(text);
  std::vector<std::string> pieces;
  size_t start = 0;
  for (const size_t end : trie_offsets(*trie_, chars)) {
    if (start > end) continue;  // Transformers logs "a bug in Trie" and skips the cut
    if (start == end) continue;
    pieces.push_back(encode_range(chars, start, end));
    start = end;
  }
  auto added = [&](const std::string& piece) -> const AddedToken* {
    for (const AddedToken* t : raw_)
      if (t->content == piece) return t;
    return nullptr;
  };
  // lstrip/rstrip/single_word act on the neighbouring pieces, as PythonBackend.tokenize does.
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string token = pieces[i];
    const AddedToken* t = added(token);
    if (t == nullptr) continue;
    const bool has_left = i > 0 && !pieces[i - 1].empty();
    const bool has_right = i + 1 < pieces.size() && !pieces[i + 1].empty();
    if (t->rstrip && has_right) pieces[i + 1] = py_lstrip(pieces[i + 1]);
    if (t->lstrip && has_left) pieces[i - 1] = py_rstrip(pieces[i - 1]);
    if (t->single_word) {
      if (has_left && pieces[i - 1].back() != ' ') {
        pieces[i - 1] += token;
        pieces[i].clear();
      } else if (has_right && pieces[i + 1].front() != ' ') {
        pieces[i + 1] = token + pieces[i + 1];
        pieces[i].clear();
      }
    }
  }
  std::vector<TextPiece> out;
  for (const std::string& p : pieces) {
    if (p.empty()) continue;
    const AddedToken* t = added(p);
    out.push_back({p, t ? t->id : -1});
  }
  return out;
}

}  // namespace tfm
