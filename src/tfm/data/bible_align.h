// Two Bible modules (bible_module.h) aligned verse by verse into translation pairs.
//
//   - Verses pair by key (book, chapter, verse): both modules must use the same versification's
//     keys, as SWORD's modules of one versification do whatever their language. A key in one
//     module only (the English module's Deuterocanonical books, a verse one translation leaves
//     out) is dropped and counted, and so is a pair with a side empty.
//   - Numbering check: within a chapter, translations sometimes number verses differently (the
//     Reina-Valera follows the Hebrew numbering in Numbers 13, Jonah 2, Hosea 12, ...: its 13:2
//     is the English 13:1), so the same key holds different sentences. A length-based sentence
//     alignment (Gale & Church 1993) of each chapter finds them: verse lengths in characters, the
//     target's length normally distributed around c × the source's with variance s² per
//     character (c and s² fitted on all pairs: the ratio of total lengths, and s² robustly from
//     the median squared residual), beads 1-1 (prior 0.99), 1-0 and 0-1 (1e-4 each), 2-1 and 1-2
//     (1e-3 each). A pair is kept when the best alignment pairs the two verses 1-1; the rest are
//     dropped and counted: verses shifted against each other, one side's verse split over two of
//     the other's, and a pair whose lengths are too far apart to be one sentence (a 1-1 bead
//     that costs more than skipping both verses).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tfm/data/bible_module.h"

namespace tfm {

struct BiblePair {
  VerseKey key;
  std::string src, trg;
};

struct BibleAlignOptions {
  bool check_numbering = true;
};

struct BibleAlignStats {
  int64_t only_src = 0, only_trg = 0;  // verses whose key the other module lacks
  int64_t empty = 0;                   // keys in both with a side empty
  int64_t renumbered = 0;              // pairs the numbering check dropped
  int64_t pairs = 0;                   // pairs returned
  std::vector<std::string> books_only_src, books_only_trg;  // whole books in one module only
  std::vector<std::string> renumbered_chapters;             // "Numbers 13 (33 verses)", ...
  double length_ratio = 0, length_variance = 0;             // c and s² of the check

  std::string summary() const;  // a few lines for the prepare-bible report
};

// The pairs in the source module's order.
std::vector<BiblePair> align_bibles(const BibleModule& src, const BibleModule& trg,
                                    const BibleAlignOptions& options, BibleAlignStats& stats);

// The check on one chapter: lengths (in characters) of its verses in the two texts, verse i of
// one against verse i of the other; true where the alignment pairs them 1-1 (see above).
std::vector<bool> same_numbering(const std::vector<int64_t>& src_lengths,
                                 const std::vector<int64_t>& trg_lengths, double ratio,
                                 double variance);

}  // namespace tfm
