// Reading parallel corpora as a stream of sentence pairs, and the filters training applies to
// them. Nothing is dropped silently: every skipped line is counted in CorpusStats under its reason.
//
// Two layouts:
//  - parallel plain text: a source file and a target file, one sentence a line, line i of one
//    aligned with line i of the other;
//  - TSV: one file, `source<TAB>target` a line.
// Lines are read one at a time (a corpus larger than memory is fine). A trailing '\r' is stripped
// (CRLF files), and every invalid UTF-8 sequence becomes U+FFFD (the bytes EF BF BD), counted.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tfm/data/batch.h"

namespace tfm {

// Counts of everything the reader and the filter saw. `pairs_kept` plus the skip counts equals
// `pairs_read`.
struct CorpusStats {
  int64_t pairs_read = 0;               // lines (parallel) or TSV lines seen
  int64_t pairs_kept = 0;               // handed on
  int64_t skipped_empty = 0;            // source or target empty (as text, or encoding to no ids)
  int64_t skipped_malformed = 0;        // TSV line without exactly one tab
  int64_t skipped_too_long = 0;         // source or target longer than max_length ids
  int64_t skipped_ratio = 0;            // longer / shorter > max_ratio
  int64_t utf8_repaired_lines = 0;      // lines (either side) that held invalid UTF-8
  int64_t utf8_replaced_sequences = 0;  // invalid sequences replaced by U+FFFD
  // FILE:LINE of the first malformed and the first repaired line ("" when none), so a log says
  // where to look, not only how many.
  std::string first_malformed, first_repaired;

  int64_t skipped() const {
    return skipped_empty + skipped_malformed + skipped_too_long + skipped_ratio;
  }
  // One line for logs, e.g. "read 1000 pairs, kept 990; skipped: 4 empty, 0 malformed, ...".
  std::string summary() const;
};

// Replaces each maximal invalid UTF-8 subsequence of `in` by U+FFFD, following the Unicode
// "substitution of maximal subparts" practice (what Python's errors="replace" and ICU do): a
// truncated but well-begun sequence becomes one U+FFFD, every other bad byte one each. Overlong
// forms, surrogates (ED A0..BF) and code points above U+10FFFF are invalid. Returns the number of
// replacements through `replaced` (may be null).
std::string repair_utf8(std::string_view in, int64_t* replaced = nullptr);

// One aligned pair of sentences. `line` is its 1-based line number in the input.
struct TextPair {
  std::string src, trg;
  int64_t line = 0;
};

// Streams the pairs of a corpus, skipping (and counting) empty and malformed lines. Only the
// current line is held in memory.
class CorpusReader {
 public:
  // Parallel plain-text files. Their line counts must agree: next() throws an error naming both
  // files and the line at which the shorter one ended.
  static CorpusReader parallel(const std::string& src_path, const std::string& trg_path);
  // A TSV file: `source\ttarget` a line. A line without exactly one tab is a counted skip
  // (skipped_malformed), not an error: web-crawled TSV corpora routinely hold a few such lines
  // and one should not end a long run.
  static CorpusReader tsv(const std::string& path);
  // One plain-text file of target sentences (a language model's corpus): each pair's source is
  // empty, and an empty line is a counted skip.
  static CorpusReader monolingual(const std::string& path);

  CorpusReader(CorpusReader&&) = default;
  CorpusReader& operator=(CorpusReader&&) = default;

  // The next kept pair, or false at the end of the corpus.
  bool next(TextPair& pair);
  const CorpusStats& stats() const { return stats_; }
  // For callers that filter further (filter_pair) and keep one set of counts.
  CorpusStats& stats() { return stats_; }
  // "a.de + a.en" or "a.tsv", for messages.
  std::string name() const;

 private:
  CorpusReader() = default;
  // Reads one line of `in` into `line` (CR stripped, UTF-8 repaired); false at end of file.
  bool read_line(std::ifstream& in, std::string& line, bool& repaired);
  // Counts a repaired line of `path` (the current line) and keeps the first one's place.
  void note_repaired(const std::string& path);

  std::string src_path_, trg_path_;  // trg_path_ empty for TSV and monolingual files
  bool monolingual_ = false;
  std::ifstream src_, trg_;
  std::string raw_;  // the undecoded line, reused to avoid an allocation a line
  int64_t line_ = 0;
  CorpusStats stats_;
};

struct FilterOptions {
  int64_t max_length = 0;  // most ids a side may have, EOS/BOS not counted; 0: no limit
  double max_ratio = 3.0;  // most max(len)/min(len) (both > 0); 0: no limit
  bool sources = true;     // false: targets alone (empty sources), no ratio
};

enum class SkipReason { none, empty, too_long, ratio };

// Why a pair of id sequences should be skipped (checked in this order: empty, too long, ratio),
// or SkipReason::none. With stats, a skip is counted there and a kept pair is not (the reader
// counted it as kept; a skip here moves it from pairs_kept to its reason).
SkipReason filter_pair(const Ids& src, const Ids& trg, const FilterOptions& options,
                       CorpusStats* stats = nullptr);

// One training example: source and target ids, without EOS/BOS (make_batch adds them).
struct Example {
  Ids src, trg;
};

using Encoder = std::function<Ids(const std::string&)>;

// Reads the rest of the corpus, encodes each side and keeps the pairs that pass filter_pair.
// The examples are held in memory (training shuffles them); the text is not. Every count ends
// up in reader.stats().
// With kept_targets, the target text of every kept example is appended there too (validation
// BLEU scores against the raw references).
std::vector<Example> read_examples(CorpusReader& reader, const Encoder& encode_src,
                                   const Encoder& encode_trg, const FilterOptions& options,
                                   std::vector<std::string>* kept_targets = nullptr);

}  // namespace tfm
