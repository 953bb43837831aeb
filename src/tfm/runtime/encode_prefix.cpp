#include "tfm/runtime/encode_prefix.h"

#include <algorithm>

namespace tfm::runtime {

namespace {

// Ids past `enough` that a cut must yield: the last word before a whitespace cut, or the last
// pieces before a cut inside a word (which may be split otherwise than in the whole text).
constexpr size_t kMarginAtSpace = 8, kMarginInWord = 64;
// Bytes per id of the first budget: SentencePiece's pieces are at most 16 characters.
constexpr size_t kBytesPerId = 16;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// The first whitespace at or after `from` (before `limit`), or a character's first byte at
// `from` when there is none; `at_space` says which.
size_t cut_point(const std::string& text, size_t from, size_t limit, bool& at_space) {
  size_t cut = from;
  while (cut < text.size() && cut < limit && !is_space(text[cut])) ++cut;
  at_space = cut < text.size() && is_space(text[cut]);
  if (at_space) return cut;
  cut = from;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

}  // namespace

Ids encode_enough(const std::string& text, size_t enough,
                  const std::function<Ids(const std::string&)>& encode, bool* cut) {
  if (cut) *cut = false;
  if (enough >= text.size() / kBytesPerId) return encode(text);  // short enough: whole
  const size_t cap = std::max<size_t>(64 * 1024, enough * kMaxBytesPerId);
  for (size_t budget = std::max<size_t>(4096, enough * kBytesPerId);; budget *= 4) {
    budget = std::min(budget, cap);
    if (budget >= text.size()) return encode(text);
    bool at_space = false;
    const size_t end = cut_point(text, budget, std::min(2 * budget, cap + 1024), at_space);
    Ids ids = encode(text.substr(0, end));
    if (ids.size() > enough + (at_space ? kMarginAtSpace : kMarginInWord) || budget == cap) {
      if (cut) *cut = true;
      return ids;
    }
  }
}

}  // namespace tfm::runtime
