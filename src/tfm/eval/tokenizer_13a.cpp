// The 13a rules as byte scanners rather than std::regex: every pattern is one or two fixed-width
// characters, so a left-to-right scan that skips past each match reproduces re.sub's
// non-overlapping semantics exactly, and is far faster than std::regex.
//
// Working on bytes instead of code points gives the same output: all the classes that must match
// are ASCII; the negated classes ([^0-9]) only ever consume the last byte of a multi-byte character
// (rule 2) or its first byte (rule 3), and no continuation byte can start another match.
#include "tfm/eval/tokenizer_13a.h"

#include <cstdint>

namespace tfm::eval {

namespace {

// One decoded unit of s starting at i: its code point and its length in bytes.
struct Decoded {
  char32_t cp;
  size_t len;
};

Decoded decode_one(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  const Decoded invalid{static_cast<char32_t>(0x110000 + c), 1};
  if (c < 0x80) return {c, 1};
  size_t len;
  char32_t cp;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the first continuation byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, cp = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, cp = c & 0x07;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return invalid;
  }
  if (i + len > s.size()) return invalid;
  for (size_t k = 1; k < len; ++k) {
    const uint8_t t = b(i + k);
    if (k == 1 ? (t < lo || t > hi) : (t < 0x80 || t > 0xBF)) return invalid;
    cp = (cp << 6) | (t & 0x3F);
  }
  return {cp, len};
}

// Python's str.replace(from, to): non-overlapping, left to right, no rescanning of the output.
std::string replace_all(const std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos).append(to);
  }
  out.append(s, pos, std::string::npos);
  return out;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Rule 1's class [\{-\~\[-\` -\&\(-\+\:-\@\/]: { | } ~  [ \ ] ^ _ `  space ! " # $ % &
// ( ) * +  : ; < = > ? @  /. Not ' , - . digits or letters.
bool is_rule1_punct(char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
         (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

// re.sub for a two-character pattern (first, second) -> emit(first, second, out).
template <typename First, typename Second, typename Emit>
std::string sub_pairs(const std::string& s, First first, Second second, Emit emit) {
  std::string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      emit(s[i], s[i + 1], out);
      i += 2;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

}  // namespace

bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

std::u32string decode_utf8_lenient(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const Decoded d = decode_one(s, i);
    out.push_back(d.cp);
    i += d.len;
  }
  return out;
}

std::vector<std::string_view> split_python_whitespace(std::string_view s) {
  std::vector<std::string_view> words;
  size_t start = std::string_view::npos;
  for (size_t i = 0; i < s.size();) {
    const Decoded d = decode_one(s, i);
    if (is_python_space(d.cp)) {
      if (start != std::string_view::npos) words.push_back(s.substr(start, i - start));
      start = std::string_view::npos;
    } else if (start == std::string_view::npos) {
      start = i;
    }
    i += d.len;
  }
  if (start != std::string_view::npos) words.push_back(s.substr(start));
  return words;
}

std::string_view rstrip_python_whitespace(std::string_view s) {
  size_t end = 0;  // one past the last non-whitespace character
  for (size_t i = 0; i < s.size();) {
    const Decoded d = decode_one(s, i);
    i += d.len;
    if (!is_python_space(d.cp)) end = i;
  }
  return s.substr(0, end);
}

std::string tokenize_13a(std::string_view line) {
  std::string s(line);
  s = replace_all(s, "<skipped>", "");
  s = replace_all(s, "-\n", "");
  s = replace_all(s, "\n", " ");
  s = replace_all(s, "&quot;", "\"");
  s = replace_all(s, "&amp;", "&");
  s = replace_all(s, "&lt;", "<");
  s = replace_all(s, "&gt;", ">");
  // sacreBLEU pads with a space on each side before the rules, so a leading or trailing . or ,
  // has a non-digit neighbour.
  s = " " + s + " ";

  // Rule 1: pad most ASCII punctuation with spaces.
  {
    std::string out;
    out.reserve(s.size() * 2);
    for (char c : s) {
      if (is_rule1_punct(c)) {
        out.push_back(' ');
        out.push_back(c);
        out.push_back(' ');
      } else {
        out.push_back(c);
      }
    }
    s = std::move(out);
  }
  const auto not_digit = [](char c) { return !is_digit(c); };
  const auto period_comma = [](char c) { return c == '.' || c == ','; };
  // Rule 2: ([^0-9])([\.,]) -> "\1 \2 ": period and comma unless preceded by a digit.
  s = sub_pairs(s, not_digit, period_comma, [](char a, char b, std::string& out) {
    out.push_back(a);
    out.push_back(' ');
    out.push_back(b);
    out.push_back(' ');
  });
  // Rule 3: ([\.,])([^0-9]) -> " \1 \2": period and comma unless followed by a digit.
  s = sub_pairs(s, period_comma, not_digit, [](char a, char b, std::string& out) {
    out.push_back(' ');
    out.push_back(a);
    out.push_back(' ');
    out.push_back(b);
  });
  // Rule 4: ([0-9])(-) -> "\1 \2 ": a dash after a digit.
  s = sub_pairs(
      s, is_digit, [](char c) { return c == '-'; },
      [](char a, char b, std::string& out) {
        out.push_back(a);
        out.push_back(' ');
        out.push_back(b);
        out.push_back(' ');
      });

  // ' '.join(line.strip().split())
  std::string result;
  result.reserve(s.size());
  for (std::string_view w : split_python_whitespace(s)) {
    if (!result.empty()) result.push_back(' ');
    result.append(w);
  }
  return result;
}

}  // namespace tfm::eval
