// GPT-2's byte-level pre-tokenisation (the `tokenizers` ByteLevel pre-tokenizer and decoder):
// the text cut by GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (character classes as Oniguruma, the `tokenizers` regex engine, defines them; data/unicode.h),
// each piece's UTF-8 bytes written as the printable characters of GPT-2's byte alphabet, and the
// reverse for decoding.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tfm::byte_level {

// The pattern's matches, in order; together they cover `text`.
std::vector<std::string_view> split(std::string_view text);
// Each byte of `bytes` as its byte-alphabet character ("Ġ" for a space), UTF-8 encoded.
std::string to_alphabet(std::string_view bytes);
// The decoder: each token's characters mapped back to bytes (a token holding a character outside
// the alphabet is taken as its own UTF-8 bytes), all tokens' bytes joined, and invalid UTF-8
// replaced by U+FFFD.
std::string decode(const std::vector<std::string>& tokens);

}  // namespace tfm::byte_level
