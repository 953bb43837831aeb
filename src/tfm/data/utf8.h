// UTF-8 code points and a simple case mapping, for the text cleaning of data/ (osis_text,
// bible_module). Input is valid UTF-8 (repair_utf8 in corpus.h makes it so).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tfm {

// The code point of the sequence starting at s[i] and its length in bytes (a sequence cut off by
// the end of `s` gives what it has).
char32_t utf8_decode_at(std::string_view s, size_t i, size_t& len);
void utf8_append(std::string& out, char32_t cp);

// One-to-one case mapping of ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic (the letters of
// the European languages' Bibles); every other code point maps to itself.
char32_t to_lower_cp(char32_t cp);
char32_t to_upper_cp(char32_t cp);

// A letter: an ASCII letter, or a code point from U+00C0 on that is not punctuation or a symbol
// of Latin-1 (× ÷), General Punctuation (U+2000–U+206F) or CJK punctuation (U+3000–U+303F).
bool is_letter_cp(char32_t cp);

}  // namespace tfm
