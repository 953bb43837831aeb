// SWORD's IMP export format: what `mod2imp MODULE` (Debian: libsword-utils) prints for a module.
// An IMP file is a list of entries, each a line `$$$KEY` followed by the entry's raw text on the
// lines up to the next `$$$` line. The raw text of a Bible module is OSIS markup (osis_text.h).
// Keys of a Bible are `BOOK CHAPTER:VERSE` with the versification's English book name, the same
// in every module of that versification whatever its language ("Genesis 1:1", "Revelation of
// John 22:21", "Esther (Greek) 1:1"); the module and testament headings are keys in brackets
// (`[ Module Heading ]`), and verse 0 of a chapter (chapter 0 of a book) holds what precedes its
// first verse: book titles, introductions, chapter markers.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfm {

struct ImpEntry {
  std::string key;
  std::string text;  // the entry's lines joined by '\n'; the last line break dropped
  int64_t line = 0;  // 1-based line of the `$$$KEY` line
};

struct ImpStats {
  int64_t lines = 0;
  int64_t entries = 0;
  int64_t utf8_repaired_lines = 0;
  int64_t utf8_replaced_sequences = 0;
};

// The entries in file order. CRLF line ends are accepted; invalid UTF-8 becomes U+FFFD
// (repair_utf8), counted. Errors name `name` and the line: text (other than blank lines) before
// the first `$$$` line, a `$$$` line with an empty key. An empty file is not an error here (it
// holds no entries; the caller says what it needed).
std::vector<ImpEntry> parse_imp(std::istream& in, const std::string& name, ImpStats& stats);

// Where a verse is: the book as the module's keys name it, chapter and verse from 1 (0 for the
// text before a book's or a chapter's first verse).
struct VerseKey {
  std::string book;
  int chapter = 0;
  int verse = 0;

  std::string str() const;  // "Mark 1:1"
  bool operator==(const VerseKey&) const = default;
};

// A Bible key: `BOOK CHAPTER:VERSE`, or std::nullopt for a heading key in brackets
// ("[ Module Heading ]"). Anything else is an error naming the key (the caller adds the line).
std::optional<VerseKey> parse_verse_key(std::string_view key);

}  // namespace tfm
