#include "tfm/data/bible_module.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "tfm/core/check.h"
#include "tfm/data/utf8.h"

namespace tfm {

std::string BibleModuleStats::summary() const {
  std::ostringstream s;
  s << imp.entries << " entries in " << imp.lines << " lines: " << verses << " verses (" << empty
    << " empty after markup removal), " << prefaces << " verse-0 prefaces and " << headings
    << " headings skipped";
  if (imp.utf8_repaired_lines > 0) {
    s << "; repaired invalid UTF-8 in " << imp.utf8_repaired_lines << " lines";
  }
  s << "\n  removed with their text:";
  if (markup.removed.empty()) s << " nothing";
  for (const auto& [name, n] : markup.removed) s << " " << name << " " << n;
  if (drop_caps) s << "\n  drop caps: " << drop_caps_restored << " chapter-initial words re-cased";
  if (!markup.unknown.empty()) {
    s << "\n  elements tfm does not know (their text kept):";
    for (const auto& [name, n] : markup.unknown) s << " " << name << " " << n;
  }
  return s.str();
}

namespace {

struct Word {
  size_t begin, end;  // bytes
  std::u32string cps;
  char32_t before;  // the nearest non-space character before the word, 0 at the start
};

std::vector<Word> words_of(const std::string& text) {
  std::vector<Word> words;
  char32_t last = 0;
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    const char32_t cp = utf8_decode_at(text, i, len);
    if (!is_letter_cp(cp)) {
      if (cp != ' ') last = cp;
      i += len;
      continue;
    }
    Word w{i, i, {}, last};
    while (i < text.size()) {
      const char32_t c = utf8_decode_at(text, i, len);
      if (!is_letter_cp(c)) break;
      w.cps += c;
      i += len;
    }
    w.end = i;
    last = w.cps.back();
    words.push_back(std::move(w));
  }
  return words;
}

bool all_capitals(const std::u32string& w) {
  if (w.size() < 2) return false;
  for (char32_t c : w) {
    if (to_lower_cp(c) == c) return false;
  }
  return true;
}

std::string lower_form(const std::u32string& w, bool capitalised) {
  std::string out;
  for (size_t i = 0; i < w.size(); ++i) {
    utf8_append(out, i == 0 && capitalised ? w[i] : to_lower_cp(w[i]));
  }
  return out;
}

// Inside a sentence: after a letter, a digit, a comma or a semicolon.
bool inside_sentence(char32_t before) {
  return is_letter_cp(before) || (before >= '0' && before <= '9') || before == ',' || before == ';';
}

// A sentence starts here: before the word, past spaces and opening marks (¡ ¿ “ ‘ ( « "), is
// nothing or . ! ?
bool starts_sentence(const std::string& text, const Word& w) {
  char32_t last = 0;
  for (size_t i = 0; i < w.begin;) {
    size_t len = 1;
    const char32_t cp = utf8_decode_at(text, i, len);
    const bool opening = cp == 0xA1 || cp == 0xBF || cp == 0x201C || cp == 0x2018 || cp == '(' ||
                         cp == 0xAB || cp == '"';
    if (cp != ' ' && !opening) last = cp;
    i += len;
  }
  return last == 0 || last == '.' || last == '!' || last == '?';
}

}  // namespace

int64_t restore_drop_caps(std::vector<BibleVerse>& verses) {
  // How often each form occurs inside sentences, where capitals mean a name.
  std::unordered_map<std::string, int64_t> inside;
  int64_t firsts = 0, with_capitals = 0;
  for (const BibleVerse& v : verses) {
    const std::vector<Word> words = words_of(v.text);
    for (const Word& w : words) {
      if (inside_sentence(w.before)) ++inside[v.text.substr(w.begin, w.end - w.begin)];
    }
    if (v.key.verse == 1 && !v.text.empty()) {
      ++firsts;
      for (const Word& w : words) {
        if (all_capitals(w.cps)) {
          ++with_capitals;
          break;
        }
      }
    }
  }
  if (with_capitals * 2 <= firsts) return 0;
  int64_t restored = 0;
  for (BibleVerse& v : verses) {
    if (v.key.verse != 1) continue;
    for (const Word& w : words_of(v.text)) {
      if (!all_capitals(w.cps)) continue;
      const std::string capitalised = lower_form(w.cps, true), lower = lower_form(w.cps, false);
      const bool cap = starts_sentence(v.text, w) || inside[capitalised] > inside[lower];
      v.text.replace(w.begin, w.end - w.begin, cap ? capitalised : lower);
      ++restored;
      break;
    }
  }
  return restored;
}

BibleModule parse_bible_module(std::istream& in, const std::string& name) {
  BibleModule m;
  m.name = name;
  BibleModuleStats& st = m.stats;
  const std::vector<ImpEntry> entries = parse_imp(in, name, st.imp);
  std::map<std::tuple<std::string, int, int>, int64_t> line_of;
  for (const ImpEntry& e : entries) {
    std::optional<VerseKey> key;
    try {
      key = parse_verse_key(e.key);
    } catch (const Error& err) {
      TFM_FAIL() << name << ":" << e.line << ": " << err.message();
    }
    if (!key) {
      ++st.headings;
      continue;
    }
    if (key->verse == 0 || key->chapter == 0) {
      ++st.prefaces;
      continue;
    }
    const auto [it, added] =
        line_of.emplace(std::tuple(key->book, key->chapter, key->verse), e.line);
    TFM_CHECK(added) << name << ":" << e.line << ": " << key->str()
                     << " occurs twice (also at line " << it->second << ")";
    BibleVerse v{*key, {}, e.line};
    try {
      v.text = osis_verse_text(e.text, st.markup);
    } catch (const Error& err) {
      TFM_FAIL() << name << ":" << e.line << " (" << key->str() << "): " << err.message();
    }
    if (m.books.empty() || m.books.back() != key->book) {
      if (std::find(m.books.begin(), m.books.end(), key->book) == m.books.end()) {
        m.books.push_back(key->book);
      }
    }
    ++st.verses;
    if (v.text.empty()) ++st.empty;
    m.verses.push_back(std::move(v));
  }
  TFM_CHECK(!m.verses.empty()) << name << " holds no verses (" << st.imp.entries
                               << " entries); is it the IMP export of a Bible module?";
  st.drop_caps_restored = restore_drop_caps(m.verses);
  st.drop_caps = st.drop_caps_restored > 0;
  return m;
}

BibleModule read_bible_module(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TFM_CHECK(in) << "cannot read " << path
                << (std::filesystem::exists(path)
                        ? std::string()
                        : std::string(": no such file; write a module's IMP export with `mod2imp "
                                      "MODULE > FILE` (Debian: libsword-utils)"));
  return parse_bible_module(in, path);
}

}  // namespace tfm
