// Aligned Bible verses (bible_align.h) split into train/valid/test by whole books, and written as
// a corpus like `tfm prepare-ding` writes one.
//
// Held-out books, not held-out verses: a Bible repeats itself (parallel accounts in Kings and
// Chronicles, the synoptic Gospels, formulas such as "Yahweh spoke to Moses, saying,"), so verses
// drawn at random would leave near-copies of the test verses in training. The defaults hold out
// a Gospel and a prophet for test (Mark, Amos: 824 verses in the Reina-Valera/WEB pair) and
// narrative, prophecy and letters for validation (Ruth, Joel, Philippians, James: 370 verses).
// Book names are the modules' key names ("Mark", "I Corinthians", "Revelation of John").
#pragma once

#include <string>
#include <vector>

#include "tfm/data/bible_align.h"

namespace tfm {

struct BibleSplitOptions {
  std::vector<std::string> test_books = {"Mark", "Amos"};
  std::vector<std::string> valid_books = {"Ruth", "Joel", "Philippians", "James"};
};

struct BibleSplit {
  std::vector<BiblePair> train, valid, test;
};

// Each pair to test or valid when its book is listed there, else to train; order kept. Errors: a
// book named in both lists or twice, a book none of the pairs has (the message lists the books
// there are), and a split left empty.
BibleSplit split_bible_by_books(const std::vector<BiblePair>& pairs,
                                const BibleSplitOptions& options);

// Writes DIR/{train,valid,test}.{SRC_LANG,TRG_LANG}, one verse a line, and
// DIR/{train,valid,test}.keys with each line's verse ("Mark 1:1"); each file atomically; creates
// DIR. The languages must be non-empty and differ (they name the files).
void write_bible_split(const BibleSplit& split, const std::string& dir, const std::string& src_lang,
                       const std::string& trg_lang);

}  // namespace tfm
