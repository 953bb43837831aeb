// UTF-8 and the Unicode character classes of the converted tokenizers, each as the library that
// Transformers runs sees it (the table is generated from those libraries by
// tools/make_unicode_tables.py): GPT-2's pattern classes as Oniguruma matches them, whitespace as
// Rust and as Python define it, and UAX #29's grapheme break inputs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tfm::unicode {

enum Prop : uint32_t {
  letter = 1,      // Oniguruma \p{L}
  number = 2,      // Oniguruma \p{N}
  onig_space = 4,  // Oniguruma \s
  rust_space = 8,  // Rust char::is_whitespace, the regex crate's \s
  rust_word = 16,  // the regex crate's \w
  py_space = 32,   // Python str.isspace
  ext_pict = 64,   // Extended_Pictographic
};

enum class GraphemeBreak : uint8_t {
  other,
  cr,
  lf,
  control,
  extend,
  zwj,
  regional_indicator,
  prepend,
  spacing_mark,
  l,
  v,
  t,
  lv,
  lvt
};
enum class IndicConjunctBreak : uint8_t { none, linker, consonant, extend };

uint32_t props(char32_t c);
inline bool has(char32_t c, Prop p) {
  return (props(c) & p) != 0;
}
GraphemeBreak grapheme_break(char32_t c);
IndicConjunctBreak indic_conjunct_break(char32_t c);

// The code point at s[i], i moved past it. Input must be valid UTF-8 (data/corpus.h's
// repair_utf8 makes it so).
char32_t next(std::string_view s, size_t& i);
// Length in bytes of the UTF-8 sequence starting with byte b (valid input).
inline size_t sequence_length(unsigned char b) {
  return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}
void append(std::string& out, char32_t c);
// Where the code point that ends at byte i (i > 0) of valid UTF-8 begins.
size_t previous(std::string_view s, size_t i);
// s without the characters having `p` at its front and/or back (Python's strip, Rust's
// trim, on their own whitespace).
std::string_view trim(std::string_view s, Prop p, bool front, bool back);
std::vector<char32_t> decode(std::string_view s);

// Byte offsets where s's extended grapheme clusters begin (UAX #29, with the Indic conjunct
// rule GB9c), plus s.size() at the end.
std::vector<size_t> grapheme_bounds(std::string_view s);

}  // namespace tfm::unicode
