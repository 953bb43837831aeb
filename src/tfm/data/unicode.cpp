#include "tfm/data/unicode.h"

#include <algorithm>
#include <array>

#include "tfm/data/unicode_tables.h"

namespace tfm::unicode {

namespace {

uint32_t lookup(char32_t c) {
  const CodeRange* begin = kCodeRanges;
  const CodeRange* end = kCodeRanges + kCodeRangeCount;
  const CodeRange* it = std::upper_bound(begin, end, static_cast<uint32_t>(c),
                                         [](uint32_t v, const CodeRange& r) { return v < r.lo; });
  if (it == begin) return 0;
  --it;
  return c <= it->hi ? it->props : 0;
}

}  // namespace

uint32_t props(char32_t c) {
  // ASCII is most of most text: a direct table.
  static const auto ascii = [] {
    std::array<uint32_t, 128> t{};
    for (char32_t c = 0; c < 128; ++c) t[c] = lookup(c);
    return t;
  }();
  return c < 128 ? ascii[c] : lookup(c);
}

GraphemeBreak grapheme_break(char32_t c) {
  return static_cast<GraphemeBreak>((props(c) >> 8) & 0xF);
}

IndicConjunctBreak indic_conjunct_break(char32_t c) {
  return static_cast<IndicConjunctBreak>((props(c) >> 12) & 0x3);
}

char32_t next(std::string_view s, size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  const size_t n = sequence_length(b);
  char32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
  for (size_t k = 1; k < n && i + k < s.size(); ++k)
    c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return c;
}

void append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

size_t previous(std::string_view s, size_t i) {
  do --i;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80);
  return i;
}

std::string_view trim(std::string_view s, Prop p, bool front, bool back) {
  size_t begin = 0, end = s.size();
  while (front && begin < end) {
    size_t j = begin;
    if (!has(next(s, j), p)) break;
    begin = j;
  }
  while (back && end > begin) {
    const size_t i = previous(s, end);
    size_t j = i;
    if (!has(next(s, j), p)) break;
    end = i;
  }
  return s.substr(begin, end - begin);
}

std::vector<char32_t> decode(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) out.push_back(next(s, i));
  return out;
}

namespace {

using GB = GraphemeBreak;

bool is_control(GB g) {
  return g == GB::control || g == GB::cr || g == GB::lf;
}

// The state UAX #29's rules need from the characters before a boundary candidate.
struct ClusterState {
  bool emoji_zwj = false;        // ExtPict Extend* ZWJ just seen (GB11)
  bool in_pict = false;          // ExtPict Extend* so far
  int regional = 0;              // regional indicators in a row (GB12/13)
  bool conjunct = false;         // InCB Consonant [Extend|Linker]* seen
  bool conjunct_linked = false;  // ... with a Linker after the consonant (GB9c)
};

// Whether there is no break between a (state before it) and b: GB3-GB13.
bool joined(char32_t a, char32_t b, const ClusterState& st) {
  const GB ga = grapheme_break(a), gb = grapheme_break(b);
  if (ga == GB::cr && gb == GB::lf) return true;       // GB3
  if (is_control(ga) || is_control(gb)) return false;  // GB4, GB5
  if (ga == GB::l && (gb == GB::l || gb == GB::v || gb == GB::lv || gb == GB::lvt))
    return true;                                                                   // GB6
  if ((ga == GB::lv || ga == GB::v) && (gb == GB::v || gb == GB::t)) return true;  // GB7
  if ((ga == GB::lvt || ga == GB::t) && gb == GB::t) return true;                  // GB8
  if (gb == GB::extend || gb == GB::zwj || gb == GB::spacing_mark) return true;    // GB9, GB9a
  if (ga == GB::prepend) return true;                                              // GB9b
  if (st.conjunct_linked && indic_conjunct_break(b) == IndicConjunctBreak::consonant)
    return true;                                      // GB9c
  if (st.emoji_zwj && has(b, ext_pict)) return true;  // GB11
  if (ga == GB::regional_indicator && gb == GB::regional_indicator)
    return st.regional % 2 == 1;  // GB12, GB13
  return false;
}

void advance(ClusterState& st, char32_t c) {
  const GB g = grapheme_break(c);
  const IndicConjunctBreak incb = indic_conjunct_break(c);
  // GB11's ExtPict Extend* ZWJ.
  st.emoji_zwj = st.in_pict && g == GB::zwj;
  if (has(c, ext_pict))
    st.in_pict = true;
  else if (g != GB::extend)
    st.in_pict = false;
  st.regional = g == GB::regional_indicator ? st.regional + 1 : 0;
  // GB9c's Consonant [Extend Linker]* Linker [Extend Linker]*.
  if (incb == IndicConjunctBreak::consonant) {
    st.conjunct = true;
    st.conjunct_linked = false;
  } else if (st.conjunct && incb == IndicConjunctBreak::linker) {
    st.conjunct_linked = true;
  } else if (!(st.conjunct && incb == IndicConjunctBreak::extend)) {
    st.conjunct = st.conjunct_linked = false;
  }
}

}  // namespace

std::vector<size_t> grapheme_bounds(std::string_view s) {
  std::vector<size_t> bounds;
  ClusterState st;
  char32_t prev = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const char32_t c = next(s, i);
    if (at == 0 || !joined(prev, c, st)) bounds.push_back(at);
    advance(st, c);
    prev = c;
  }
  bounds.push_back(s.size());
  return bounds;
}

}  // namespace tfm::unicode
