#include "tfm/data/osis_text.h"

#include <algorithm>
#include <array>
#include <set>
#include <vector>

#include "tfm/core/check.h"
#include "tfm/data/utf8.h"

namespace tfm {

namespace {

// How an element's text and edges count (the table in osis_text.h).
enum class Kind {
  inline_text,  // text kept, tags are not word boundaries
  text,         // text kept, tags are word boundaries
  removed,      // removed with its text
  unknown,      // not in the table: text kept, tags are word boundaries, counted
};

constexpr std::array<std::string_view, 13> kInline = {
    "transChange", "divineName", "name", "hi",        "foreign", "seg",  "abbr",
    "mentioned",   "reference",  "rdg",  "catchWord", "a",       "index"};
constexpr std::array<std::string_view, 23> kText = {
    "w",      "q",      "l",       "lg",    "lb",        "list", "item",     "p",
    "div",    "title",  "chapter", "verse", "milestone", "pb",   "cb",       "inscription",
    "salute", "signed", "closer",  "table", "row",       "cell", "lineGroup"};
constexpr std::array<std::string_view, 5> kRemoved = {"note", "speaker", "head", "figure", "title"};
// div types that are not scripture (OSIS 2.1.1's divType list, minus the structural ones).
constexpr std::array<std::string_view, 25> kRemovedDivTypes = {
    "front",     "back",       "introduction",    "glossary",   "colophon",
    "preface",   "titlePage",  "tableofContents", "dedication", "acknowledgement",
    "afterword", "appendix",   "bibliography",    "commentary", "concordance",
    "coverPage", "devotional", "gazetteer",       "imprimatur", "index",
    "map",       "outline",    "publicationData", "summary",    "annotant"};

template <size_t N>
bool among(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

struct Tag {
  std::string name;
  bool end = false;    // </name>
  bool empty = false;  // <name ... />
  std::vector<std::pair<std::string, std::string>> attributes;

  std::string_view attribute(std::string_view key) const {
    for (const auto& [k, v] : attributes) {
      if (k == key) return v;
    }
    return {};
  }
};

bool is_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == ':' || c == '.';
}
bool is_xml_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// `inner` is what stands between '<' and '>'. `at` is its offset, for messages.
Tag parse_tag(std::string_view inner, size_t at) {
  Tag tag;
  size_t i = 0;
  if (inner.starts_with('/')) {
    tag.end = true;
    i = 1;
  }
  if (!tag.end && inner.ends_with('/')) {
    tag.empty = true;
    inner.remove_suffix(1);
  }
  const size_t name_start = i;
  while (i < inner.size() && is_name_char(inner[i])) ++i;
  tag.name = std::string(inner.substr(name_start, i - name_start));
  TFM_CHECK(!tag.name.empty()) << "malformed tag <" << inner << "> at character " << at;
  while (true) {
    while (i < inner.size() && is_xml_space(inner[i])) ++i;
    if (i == inner.size()) break;
    TFM_CHECK(!tag.end) << "end tag </" << inner << "> with attributes at character " << at;
    const size_t key_start = i;
    while (i < inner.size() && is_name_char(inner[i])) ++i;
    const std::string_view key = inner.substr(key_start, i - key_start);
    const bool quoted =
        i + 1 < inner.size() && inner[i] == '=' && (inner[i + 1] == '"' || inner[i + 1] == '\'');
    TFM_CHECK(!key.empty() && quoted)
        << "malformed attribute in <" << inner << "> at character " << at;
    const char quote = inner[i + 1];
    const size_t value_end = inner.find(quote, i + 2);
    TFM_CHECK(value_end != std::string_view::npos)
        << "unterminated attribute value in <" << inner << "> at character " << at;
    tag.attributes.emplace_back(std::string(key),
                                std::string(inner.substr(i + 2, value_end - i - 2)));
    i = value_end + 1;
  }
  return tag;
}

Kind kind_of(const Tag& tag) {
  if (tag.name == "title") {
    return tag.attribute("canonical") == "true" ? Kind::text : Kind::removed;
  }
  if (tag.name == "div") {
    return among(kRemovedDivTypes, tag.attribute("type")) ? Kind::removed : Kind::text;
  }
  if (among(kRemoved, tag.name)) return Kind::removed;
  if (among(kInline, tag.name)) return Kind::inline_text;
  if (among(kText, tag.name)) return Kind::text;
  return Kind::unknown;
}

bool is_space(char32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0xA0 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x202F || c == 0x3000;
}
bool is_dash(char32_t c) {
  return c == '-' || (c >= 0x2010 && c <= 0x2015);
}
bool opens(char32_t c) {
  return c == 0x201C || c == 0x2018 || c == '(' || c == '[' || c == '{' || c == 0xBF || c == 0xA1 ||
         c == 0xAB || c == 0x201E || c == '"' || c == '\'' || is_dash(c);
}
bool closes(char32_t c) {
  return c == '.' || c == ',' || c == ';' || c == ':' || c == '!' || c == '?' || c == ')' ||
         c == ']' || c == '}' || c == 0x201D || c == 0x2019 || c == 0xBB || c == 0x2026 ||
         c == '"' || c == '\'' || is_dash(c);
}

// Collects the kept characters: whitespace runs become one space, and a word boundary (a tag)
// between two characters becomes a space unless punctuation rules it out (osis_text.h).
class TextBuilder {
 public:
  void space() { pending_space_ = true; }
  void boundary() { pending_boundary_ = true; }
  void put(char32_t cp) {
    if (is_space(cp)) return space();
    if (!out_.empty()) {
      if (pending_space_ || (pending_boundary_ && !opens(last_) && !closes(cp))) out_ += ' ';
    }
    pending_space_ = pending_boundary_ = false;
    utf8_append(out_, cp);
    last_ = cp;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
  char32_t last_ = 0;
  bool pending_space_ = false;
  bool pending_boundary_ = false;
};

// The code point of the entity at s[i] == '&'; `len` is its length with '&' and ';'.
char32_t decode_entity(std::string_view s, size_t i, size_t& len) {
  const size_t semi = s.find(';', i);
  TFM_CHECK(semi != std::string_view::npos && semi - i <= 10)
      << "a bare '&' at character " << i << " (write &amp;)";
  const std::string_view name = s.substr(i + 1, semi - i - 1);
  len = semi - i + 1;
  if (name == "amp") return '&';
  if (name == "lt") return '<';
  if (name == "gt") return '>';
  if (name == "quot") return '"';
  if (name == "apos") return '\'';
  if (name.size() >= 2 && name[0] == '#') {
    const bool hex = name[1] == 'x' || name[1] == 'X';
    const std::string digits(name.substr(hex ? 2 : 1));
    char* end = nullptr;
    const unsigned long cp = digits.empty() ? 0 : std::strtoul(digits.c_str(), &end, hex ? 16 : 10);
    if (!digits.empty() && *end == '\0' && cp > 0 && cp <= 0x10FFFF &&
        (cp < 0xD800 || cp > 0xDFFF)) {
      return static_cast<char32_t>(cp);
    }
  }
  TFM_FAIL() << "unknown entity &" << name << "; at character " << i;
  return 0;
}

struct Open {
  std::string name;
  bool removed;
};

// Applies one tag to the element stack and the set of open removed milestone regions.
void apply_tag(const Tag& tag, size_t at, std::vector<Open>& stack, std::set<std::string>& regions,
               OsisStats& stats) {
  const Kind kind = kind_of(tag);
  // A milestone pair (<l sID="x"/> ... <l eID="x"/>) counts once, at its start.
  if (!tag.end && tag.attribute("eID").empty()) {
    ++stats.elements[tag.name];
    if (kind == Kind::unknown) ++stats.unknown[tag.name];
    if (kind == Kind::removed) ++stats.removed[tag.name];
  }
  if (tag.empty) {
    // The milestone form of a removed div: <div sID="x" type="glossary"/> ... eID="x".
    if (kind == Kind::removed && !tag.attribute("sID").empty()) {
      regions.insert(std::string(tag.attribute("sID")));
    } else if (kind == Kind::removed && !tag.attribute("eID").empty()) {
      regions.erase(std::string(tag.attribute("eID")));
    }
    return;
  }
  if (!tag.end) {
    stack.push_back({tag.name, kind == Kind::removed});
    return;
  }
  const auto it =
      std::find_if(stack.rbegin(), stack.rend(), [&](const Open& o) { return o.name == tag.name; });
  if (it == stack.rend()) {
    // Opened in an earlier verse's entry: fine for text, not for what would have been removed.
    TFM_CHECK(!among(kRemoved, tag.name)) << "</" << tag.name << "> at character " << at
                                          << " without its <" << tag.name << "> in this entry";
    return;
  }
  TFM_CHECK(it == stack.rbegin()) << "</" << tag.name << "> at character " << at << " closes <"
                                  << stack.back().name << ">";
  stack.pop_back();
}

}  // namespace

std::string osis_verse_text(std::string_view osis, OsisStats& stats) {
  TextBuilder text;
  std::vector<Open> stack;
  std::set<std::string> regions;  // removed milestone divs open here
  int removed_depth = 0;          // removed elements open on the stack
  for (size_t i = 0; i < osis.size();) {
    const char c = osis[i];
    if (c == '<') {
      if (osis.substr(i, 4) == "<!--") {
        const size_t close = osis.find("-->", i + 4);
        TFM_CHECK(close != std::string_view::npos) << "unterminated comment at character " << i;
        i = close + 3;
        continue;
      }
      const size_t close = osis.find('>', i);
      TFM_CHECK(close != std::string_view::npos)
          << "unterminated tag at character " << i << ": " << osis.substr(i, 40);
      const Tag tag = parse_tag(osis.substr(i + 1, close - i - 1), i);
      apply_tag(tag, i, stack, regions, stats);
      removed_depth = static_cast<int>(
          std::count_if(stack.begin(), stack.end(), [](const Open& o) { return o.removed; }));
      if (kind_of(tag) != Kind::inline_text) text.boundary();
      i = close + 1;
      continue;
    }
    size_t len = 1;
    const char32_t cp = c == '&' ? decode_entity(osis, i, len) : utf8_decode_at(osis, i, len);
    if (removed_depth == 0 && regions.empty()) text.put(cp);
    i += len;
  }
  for (const Open& o : stack) {
    TFM_CHECK(!o.removed) << "<" << o.name << "> is not closed in this entry";
  }
  return text.take();
}

}  // namespace tfm
