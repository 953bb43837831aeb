// SentencePiece's byte fallback as the `tokenizers` models apply it: a piece with no id becomes
// one <0xXX> token per UTF-8 byte, when the vocabulary has every one of them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace tfm {

// The byte tokens' ids of `piece` (token_to_id gives -1 for a token it lacks); empty when one
// is missing.
template <typename TokenToId>
std::vector<int64_t> byte_fallback_ids(std::string_view piece, const TokenToId& token_to_id) {
  std::vector<int64_t> ids;
  for (const unsigned char b : piece) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    const int64_t id = token_to_id(std::string(name));
    if (id < 0) return {};
    ids.push_back(id);
  }
  return ids;
}

}  // namespace tfm
