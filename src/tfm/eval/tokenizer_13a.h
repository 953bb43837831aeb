// sacreBLEU's default BLEU tokenizer ("13a", the mteval-v13a.pl rules), plus the pieces of
// Python's text model that the metrics need to agree with sacreBLEU byte for byte: which
// characters str.split()/str.strip() treat as whitespace, and str-as-code-points for chrF.
//
// Text is UTF-8 bytes. Invalid UTF-8 is not an error: sacreBLEU would refuse to read such a file,
// so there is no number to match, and each invalid byte simply counts as a character of its own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tfm::eval {

// Tokenizer13a.__call__: drop "<skipped>", join "-\n", "\n" -> " ", unescape &quot; &amp; &lt;
// &gt; (in that order, each a plain left-to-right replace), then the four regex rules of
// sacreBLEU's TokenizerRegexp, then collapse whitespace to single spaces and strip.
std::string tokenize_13a(std::string_view line);

// Python's str.isspace() for one code point (what str.split()/strip() with no argument use):
// \t \n \v \f \r, \x1c-\x1f, space, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F,
// U+205F, U+3000.
bool is_python_space(char32_t c);

// Decodes UTF-8 into code points; each byte of an invalid sequence becomes 0x110000 + byte, a value
// no valid character has, so invalid bytes compare as bytes.
std::u32string decode_utf8_lenient(std::string_view s);

// str.split(): the runs of non-whitespace, as views into s.
std::vector<std::string_view> split_python_whitespace(std::string_view s);

// str.rstrip(): s without trailing whitespace.
std::string_view rstrip_python_whitespace(std::string_view s);

}  // namespace tfm::eval
