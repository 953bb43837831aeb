#include "tfm/data/sword_imp.h"

#include <charconv>

#include "tfm/core/check.h"
#include "tfm/data/corpus.h"

namespace tfm {

std::vector<ImpEntry> parse_imp(std::istream& in, const std::string& name, ImpStats& stats) {
  std::vector<ImpEntry> entries;
  std::string raw;
  while (std::getline(in, raw)) {
    ++stats.lines;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    if (stats.lines == 1 && raw.starts_with("\xEF\xBB\xBF")) raw.erase(0, 3);  // a BOM
    int64_t replaced = 0;
    std::string line = repair_utf8(raw, &replaced);
    if (replaced > 0) {
      ++stats.utf8_repaired_lines;
      stats.utf8_replaced_sequences += replaced;
    }
    if (line.starts_with("$$$")) {
      std::string key = line.substr(3);
      TFM_CHECK(key.find_first_not_of(" \t") != std::string::npos)
          << name << ":" << stats.lines << ": a '$$$' line without a key";
      entries.push_back({std::move(key), std::string(), stats.lines});
      continue;
    }
    if (entries.empty()) {
      TFM_CHECK(line.find_first_not_of(" \t") == std::string::npos)
          << name << ":" << stats.lines
          << ": text before the first '$$$KEY' line; is this an IMP file (what `mod2imp MODULE` "
             "prints)?";
      continue;
    }
    std::string& text = entries.back().text;
    // A '\n' between the lines of an entry, none after its last one: whether an entry ends in a
    // line break is an artefact of the export.
    if (stats.lines > entries.back().line + 1) text += '\n';
    text += line;
  }
  TFM_CHECK(!in.bad()) << "error reading " << name;
  for (ImpEntry& e : entries) {
    while (!e.text.empty() && e.text.back() == '\n') e.text.pop_back();
  }
  stats.entries = static_cast<int64_t>(entries.size());
  return entries;
}

std::string VerseKey::str() const {
  return book + " " + std::to_string(chapter) + ":" + std::to_string(verse);
}

namespace {

bool parse_number(std::string_view s, int& out) {
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string_view::npos) {
    return false;
  }
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::optional<VerseKey> parse_verse_key(std::string_view key) {
  while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
  if (key.starts_with("[") && key.ends_with("]")) return std::nullopt;
  const size_t space = key.rfind(' ');
  const size_t colon = key.rfind(':');
  VerseKey k;
  const bool ok = space != std::string_view::npos && space > 0 && colon != std::string_view::npos &&
                  colon > space &&
                  parse_number(key.substr(space + 1, colon - space - 1), k.chapter) &&
                  parse_number(key.substr(colon + 1), k.verse);
  TFM_CHECK(ok) << "the key '" << key
                << "' is not a Bible verse ('BOOK CHAPTER:VERSE', e.g. 'Genesis 1:1') nor a "
                   "heading in brackets; is this a Bible module?";
  k.book = std::string(key.substr(0, space));
  return k;
}

}  // namespace tfm
