// The Ding German-English dictionary (Debian package trans-de-en, /usr/share/trans/de-en) as a
// parallel corpus of short phrases and ~20k full sentences.
//
// The format, one entry a line:   German :: English
//   - `#` lines are comments; blank lines are ignored;
//   - each side splits into aligned sub-entries by " | " (headword | plural | example | ...);
//   - each sub-entry splits into synonyms by "; ".
// Rules (docs/cli.md, "tfm prepare-ding", says the same for users):
//   - cleaning drops every annotation together with its contents: {f} {pl} {vt} (grammar),
//     [Am.] [ugs.] (register, field), (...) (explanations, optional words), <...> (spelling
//     variants), /.../ (abbreviations such as /AGB/); brackets nest; an unmatched bracket is
//     dropped on its own and the text around it kept. Then runs of spaces collapse, spaces
//     before , . ; : ! ? go, and the ends are trimmed;
//   - sub-entries pair by index when both sides have the same number; otherwise (counted as
//     `unbalanced`) only the first sub-entries pair, which are the headwords;
//   - synonyms: when both sides of a sub-entry have the same number of synonyms they pair by index
//     (every one is a translation of every other, and index pairs add no duplicates of a word);
//     otherwise only the first synonym of each side pairs;
//   - a synonym that cleans to nothing is dropped; a sub-entry with a side left empty is counted
//     (`empty`); an exact repeat of an earlier (German, English) pair is counted (`duplicates`).
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

namespace tfm {

struct DingPair {
  std::string de, en;
  int64_t line = 0;  // 1-based line of the entry in the dictionary file
};

// Everything parse_ding saw. Every entry line ends up as `malformed` or yields sub-entries; every
// sub-entry either yields pairs or is counted `empty`/`unbalanced_dropped`.
struct DingStats {
  int64_t lines = 0;               // all lines, comments included
  int64_t comments = 0;            // `#` and blank lines
  int64_t malformed = 0;           // entry lines without exactly one " :: "
  int64_t unbalanced = 0;          // entries whose sides differ in " | " count (first pair kept)
  int64_t unbalanced_dropped = 0;  // sub-entries those entries lost
  int64_t sub_entries = 0;         // sub-entry pairs looked at
  int64_t empty = 0;               // sub-entries with a side empty after cleaning
  int64_t empty_synonyms = 0;      // synonyms that cleaned to nothing (annotation only)
  int64_t unpaired_synonyms = 0;   // synonyms beyond the first where the counts differ
  int64_t pairs_extracted = 0;     // synonym pairs before removing duplicates
  int64_t duplicates = 0;          // exact repeats of an earlier pair
  int64_t pairs = 0;               // unique pairs returned
  int64_t utf8_repaired_lines = 0;
  int64_t utf8_replaced_sequences = 0;

  std::string summary() const;  // several lines, for the prepare-ding report
};

// One side of a sub-entry synonym with the annotations removed (see the rules above).
std::string clean_ding_text(std::string_view text);

// A full sentence: ends in . ! or ? and has at least 4 space-separated words.
bool is_ding_sentence(std::string_view de);

// Extracts the unique pairs in file order. CRLF endings are accepted; invalid UTF-8 is replaced by
// U+FFFD (repair_utf8) and counted.
std::vector<DingPair> parse_ding(std::istream& in, DingStats& stats);
// The same from a file; a missing file is an error naming it and the Debian package.
std::vector<DingPair> read_ding(const std::string& path, DingStats& stats);

struct DingSplitOptions {
  int64_t valid = 1000;  // pairs in valid (one per German text), fewer only if too few exist
  int64_t test = 1000;
  uint64_t seed = 0;            // another seed, another split
  double sentence_share = 0.8;  // share of valid/test drawn from full sentences
};

struct DingSplit {
  std::vector<DingPair> train, valid, test;
  int64_t valid_sentences = 0, test_sentences = 0;
  // valid/test hold one pair per German text (one reference per source); the other pairs of a
  // held-out German text cannot go to train either, so they are dropped here and counted.
  int64_t held_out_extra_dropped = 0;
};

// Deterministic split keyed by a seeded 64-bit hash of the German text, so one German text never
// lands in two splits. German texts are ranked by hash within two pools (full sentences, phrases);
// valid takes the first of each pool (sentence_share of its size from sentences, the rest
// phrases; a pool too small is made up from the other), test the next, train keeps the rest in
// file order. valid/test come in hash order.
DingSplit split_ding(const std::vector<DingPair>& pairs, const DingSplitOptions& options);

// Writes DIR/{train,valid,test}.{de,en}, each file atomically; creates DIR.
void write_ding_split(const DingSplit& split, const std::string& dir);

}  // namespace tfm
