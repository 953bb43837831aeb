#include "tfm/data/byte_level.h"

#include <array>

#include "tfm/data/corpus.h"
#include "tfm/data/unicode.h"

namespace tfm::byte_level {

namespace {

// GPT-2's bytes_to_unicode: the printable bytes stand for themselves, the others (control
// characters, space, soft hyphen, ...) for 256, 257, ... in byte order.
const std::array<char32_t, 256>& byte_chars() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    char32_t extra = 256;
    for (int b = 0; b < 256; ++b) t[b] = printable(b) ? static_cast<char32_t>(b) : extra++;
    return t;
  }();
  return table;
}

// The byte a character of the alphabet stands for, or -1.
int char_byte(char32_t c) {
  static const std::array<int, 512> table = [] {
    std::array<int, 512> t;
    t.fill(-1);
    const auto& chars = byte_chars();
    for (int b = 0; b < 256; ++b) t[chars[b]] = b;
    return t;
  }();
  return c < 512 ? table[c] : -1;
}

using unicode::has;
bool is_space(char32_t c) {
  return has(c, unicode::onig_space);
}
bool is_letter(char32_t c) {
  return has(c, unicode::letter);
}
bool is_number(char32_t c) {
  return has(c, unicode::number);
}
bool is_other(char32_t c) {
  return !is_space(c) && !is_letter(c) && !is_number(c);
}

// The end of the run of characters satisfying `pred` starting at i (i itself if none).
template <typename Pred>
size_t run_end(std::string_view s, size_t i, Pred pred) {
  while (i < s.size()) {
    size_t j = i;
    if (!pred(unicode::next(s, j))) break;
    i = j;
  }
  return i;
}

// The length of the pattern's match at i (the first alternative that matches, as Oniguruma
// tries them).
size_t match_at(std::string_view s, size_t i) {
  if (s[i] == '\'') {
    for (const std::string_view suffix : {"s", "t", "re", "ve", "m", "ll", "d"})
      if (s.substr(i + 1, suffix.size()) == suffix) return 1 + suffix.size();
  }
  const size_t after_space = s[i] == ' ' ? i + 1 : i;
  // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": with the space, else without it.
  for (bool (*cls)(char32_t) : {is_letter, is_number, is_other}) {
    for (const size_t from : {after_space, i}) {
      const size_t end = run_end(s, from, cls);
      if (end > from) return end - i;
      if (from == i) break;
    }
  }
  // "\s+(?!\S)": the whitespace run, less its last character when a non-space follows;
  // else "\s+".
  const size_t end = run_end(s, i, is_space);
  if (end == s.size()) return end - i;
  size_t last = end - 1;
  while ((static_cast<unsigned char>(s[last]) & 0xC0) == 0x80) --last;
  return last > i ? last - i : end - i;
}

}  // namespace

std::vector<std::string_view> split(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < text.size();) {
    const size_t n = match_at(text, i);
    out.push_back(text.substr(i, n));
    i += n;
  }
  return out;
}

std::string to_alphabet(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const unsigned char b : bytes) unicode::append(out, byte_chars()[b]);
  return out;
}

std::string decode(const std::vector<std::string>& tokens) {
  std::string bytes;
  for (const std::string& t : tokens) {
    std::string mapped;
    bool all = true;
    for (size_t i = 0; i < t.size() && all;) {
      const int b = char_byte(unicode::next(t, i));
      if (b < 0)
        all = false;
      else
        mapped += static_cast<char>(b);
    }
    bytes += all ? mapped : t;
  }
  return repair_utf8(bytes);
}

}  // namespace tfm::byte_level
