// Added tokens (special tokens, language codes, <mask>, ...) found in the text before the model
// sees it, as each Transformers tokenizer finds them:
//  - tokenizers-backed ("fast") tokenizers: the `tokenizers` library's AddedVocabulary, the
//    leftmost-longest match first over the raw text for tokens with normalized=false, then over
//    each normalised remainder for the others; lstrip/rstrip take the whitespace beside a match,
//    single_word drops a match inside a word;
//  - SentencePiece-backed ("slow") tokenizers (Marian, M2M100): Transformers' own Python Trie
//    (the earliest match, extended to the longest), then lstrip/rstrip/single_word applied to
//    the neighbouring pieces.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tfm {

struct AddedToken {
  std::string content;
  int64_t id = -1;
  bool special = false;
  bool lstrip = false, rstrip = false, single_word = false;
  bool normalized = false;
};

// A piece of the text: an added token's id, or text for the model (id -1).
struct TextPiece {
  std::string text;
  int64_t id = -1;
};

class AddedTokenSplitter {
 public:
  enum class Style { fast, slow };
  // normalize: the fast style's normaliser (applied to the text between raw matches, and to the
  // normalized tokens' contents); may be empty for none.
  AddedTokenSplitter(std::vector<AddedToken> tokens, Style style,
                     std::function<std::string(std::string_view)> normalize = {});
  AddedTokenSplitter(const AddedTokenSplitter&) = delete;  // holds pointers into tokens_
  AddedTokenSplitter& operator=(const AddedTokenSplitter&) = delete;
  ~AddedTokenSplitter();

  // The text cut into added tokens and text; with the fast style the text pieces come out
  // normalised. Empty text pieces are dropped.
  std::vector<TextPiece> split(std::string_view text) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }

  struct TrieNode;  // the slow style's trie of the tokens' code points (added_tokens.cpp)

 private:
  struct Match {
    size_t start, end;
    const AddedToken* token;
  };
  // Leftmost-longest matches of `candidates` in s, after single_word/lstrip/rstrip.
  std::vector<Match> find_fast(std::string_view s, const std::vector<const AddedToken*>& candidates,
                               const std::vector<std::string>& patterns) const;
  void split_fast(std::string_view s, const std::vector<const AddedToken*>& candidates,
                  const std::vector<std::string>& patterns, bool normalize_rest,
                  std::vector<TextPiece>& out) const;
  std::vector<TextPiece> split_slow(std::string_view text) const;

  std::vector<AddedToken> tokens_;
  Style style_;
  std::unique_ptr<TrieNode> trie_;
  std::function<std::string(std::string_view)> normalize_;
  std::vector<const AddedToken*> raw_, normalized_;  // the fast style's two passes
  std::vector<std::string> raw_patterns_, normalized_patterns_;
};

}  // namespace tfm
