// A Bible module as clean verse text keyed by (book, chapter, verse): the IMP export of a SWORD
// module (sword_imp.h) with each verse's OSIS markup turned into text (osis_text.h).
//
//   - Entries with a heading key ("[ Module Heading ]") and verse 0 entries (book and chapter
//     prefaces) are not verses: counted and skipped.
//   - A verse whose text is empty (a verse the translation leaves out, or one holding only a
//     note) is kept with empty text; the alignment drops it (bible_align.h).
//   - Drop caps: printed Bibles such as the Reina-Valera set a chapter's first word in capitals
//     ("EN el principio", "Y CONOCIÓ Adam"), and modules keep them. When most chapters' first
//     verses hold a word of two or more capital letters, the module is taken to print drop caps,
//     and in every chapter's first verse the first such word is written as the rest of the text
//     writes it: capitalised at the start of a sentence ("En el principio"), else the form
//     (capitalised or lower case) the module uses more often inside sentences ("Y conoció Adam",
//     "Y Jehová dijo"). Capital letters: Latin-1, Latin Extended-A, Greek, Cyrillic.
// Errors name the file, the line and the key: a key that is not a Bible verse, a verse that
// occurs twice, malformed markup (osis_text.h), a file with no verses.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "tfm/data/osis_text.h"
#include "tfm/data/sword_imp.h"

namespace tfm {

struct BibleVerse {
  VerseKey key;
  std::string text;
  int64_t line = 0;  // of the entry's `$$$` line in the IMP file
};

struct BibleModuleStats {
  ImpStats imp;
  int64_t headings = 0;    // `[ ... ]` entries
  int64_t prefaces = 0;    // verse 0 entries
  int64_t verses = 0;      // verses read (empty ones included)
  int64_t empty = 0;       // of those, empty after markup removal
  bool drop_caps = false;  // the module prints drop caps (see above)
  int64_t drop_caps_restored = 0;
  OsisStats markup;

  // A few lines for the prepare-bible report.
  std::string summary() const;
};

struct BibleModule {
  std::string name;                // the file, for messages
  std::vector<BibleVerse> verses;  // in file order
  std::vector<std::string> books;  // in order of first appearance
  BibleModuleStats stats;
};

BibleModule parse_bible_module(std::istream& in, const std::string& name);
// The same from a file; a missing file is an error that says how to make one (mod2imp).
BibleModule read_bible_module(const std::string& path);

// The drop-cap step alone (see above), on verses in module order; returns the words rewritten
// (0 when the verses do not look like a drop-cap printing).
int64_t restore_drop_caps(std::vector<BibleVerse>& verses);

}  // namespace tfm
