// SentencePiece's precompiled normalisation map (the `precompiled_charsmap` of a model's
// normalizer spec: a Darts double-array trie over UTF-8 byte strings and the replacement strings
// it points into), applied as the `tokenizers` library's Precompiled normalizer applies it.
//
// That normalizer is not SentencePiece's own: it walks the text's extended grapheme clusters;
// a cluster shorter than 6 bytes is replaced, whole, by the replacement of the *shortest* entry
// the trie finds at its start (so "ﬁ" + a combining mark loses the mark); otherwise each code
// point is replaced by its own entry, if any. Transformers' NLLB and mBART-50 tokenizers run it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tfm {

class PrecompiledCharsmap {
 public:
  // The bytes as stored: u32 trie size (bytes), the trie's u32 units, the replacements.
  explicit PrecompiledCharsmap(std::string blob);
  std::string normalize(std::string_view text) const;  // text: valid UTF-8
  const std::string& blob() const { return blob_; }

 private:
  // The replacement of the shortest trie entry that prefixes `key`, or nullptr.
  const char* shortest_match(std::string_view key, size_t* len) const;

  std::string blob_;
  std::vector<uint32_t> units_;
  std::string_view replacements_;
};

}  // namespace tfm
