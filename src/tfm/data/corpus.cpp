#include "tfm/data/corpus.h"

#include <algorithm>
#include <sstream>

#include "tfm/core/check.h"

namespace tfm {

std::string CorpusStats::summary() const {
  std::ostringstream s;
  s << "read " << pairs_read << " pairs, kept " << pairs_kept << "; skipped: " << skipped_empty
    << " empty, " << skipped_malformed << " malformed, " << skipped_too_long << " too long, "
    << skipped_ratio << " length-ratio outliers; repaired invalid UTF-8 in " << utf8_repaired_lines
    << " lines (" << utf8_replaced_sequences << " sequences)";
  if (!first_malformed.empty()) s << "; first malformed line: " << first_malformed;
  if (!first_repaired.empty()) s << "; first repaired line: " << first_repaired;
  return s.str();
}

namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// Bytes a sequence starting with lead byte b needs in total (0: b cannot start one), and the
// allowed range of the second byte, which is what rules out overlong forms, surrogates and code
// points above U+10FFFF (Unicode Table 3-7).
struct LeadInfo {
  int length;
  unsigned char lo, hi;
};

LeadInfo lead_info(unsigned char b) {
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

std::string repair_utf8(std::string_view in, int64_t* replaced) {
  int64_t count = 0;
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  const size_t n = in.size();
  while (i < n) {
    const auto b = static_cast<unsigned char>(in[i]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    const LeadInfo info = lead_info(b);
    if (info.length == 0) {  // a stray continuation byte or a byte never valid in UTF-8
      out.append(kReplacement);
      ++count;
      ++i;
      continue;
    }
    // Take as many bytes as continue the sequence validly; stop at the first that does not.
    size_t k = 1;
    while (k < static_cast<size_t>(info.length) && i + k < n) {
      const auto c = static_cast<unsigned char>(in[i + k]);
      const bool ok = k == 1 ? (c >= info.lo && c <= info.hi) : (c >= 0x80 && c <= 0xBF);
      if (!ok) break;
      ++k;
    }
    if (k == static_cast<size_t>(info.length)) {
      out.append(in.substr(i, k));
    } else {  // a maximal subpart: one replacement for all of it
      out.append(kReplacement);
      ++count;
    }
    i += k;
  }
  if (replaced) *replaced = count;
  return out;
}

CorpusReader CorpusReader::parallel(const std::string& src_path, const std::string& trg_path) {
  CorpusReader r;
  r.src_path_ = src_path;
  r.trg_path_ = trg_path;
  r.src_.open(src_path, std::ios::binary);
  TFM_CHECK(r.src_) << "cannot open source corpus " << src_path;
  r.trg_.open(trg_path, std::ios::binary);
  TFM_CHECK(r.trg_) << "cannot open target corpus " << trg_path;
  return r;
}

CorpusReader CorpusReader::tsv(const std::string& path) {
  CorpusReader r;
  r.src_path_ = path;
  r.src_.open(path, std::ios::binary);
  TFM_CHECK(r.src_) << "cannot open TSV corpus " << path;
  return r;
}

CorpusReader CorpusReader::monolingual(const std::string& path) {
  CorpusReader r;
  r.src_path_ = path;
  r.monolingual_ = true;
  r.src_.open(path, std::ios::binary);
  TFM_CHECK(r.src_) << "cannot open corpus " << path;
  return r;
}

std::string CorpusReader::name() const {
  return trg_path_.empty() ? src_path_ : src_path_ + " + " + trg_path_;
}

bool CorpusReader::read_line(std::ifstream& in, std::string& line, bool& repaired) {
  if (!std::getline(in, raw_)) return false;
  if (!raw_.empty() && raw_.back() == '\r') raw_.pop_back();
  int64_t n = 0;
  line = repair_utf8(raw_, &n);
  if (n > 0) {
    repaired = true;
    stats_.utf8_replaced_sequences += n;
  }
  return true;
}

void CorpusReader::note_repaired(const std::string& path) {
  ++stats_.utf8_repaired_lines;
  if (stats_.first_repaired.empty()) stats_.first_repaired = path + ":" + std::to_string(line_);
}

bool CorpusReader::next(TextPair& pair) {
  for (;;) {
    bool repaired = false;
    if (monolingual_) {
      if (!read_line(src_, pair.trg, repaired)) return false;
      ++line_;
      ++stats_.pairs_read;
      if (repaired) note_repaired(src_path_);
      pair.src.clear();
      pair.line = line_;
      if (pair.trg.empty()) {
        ++stats_.skipped_empty;
        continue;
      }
      ++stats_.pairs_kept;
      return true;
    }
    if (trg_path_.empty()) {  // TSV
      std::string line;
      if (!read_line(src_, line, repaired)) return false;
      ++line_;
      ++stats_.pairs_read;
      if (repaired) note_repaired(src_path_);
      const size_t tab = line.find('\t');
      if (tab == std::string::npos || line.find('\t', tab + 1) != std::string::npos) {
        // An empty line is an empty pair, not a malformed one.
        ++(line.empty() ? stats_.skipped_empty : stats_.skipped_malformed);
        if (!line.empty() && stats_.first_malformed.empty())
          stats_.first_malformed = src_path_ + ":" + std::to_string(line_);
        continue;
      }
      pair.src.assign(line, 0, tab);
      pair.trg.assign(line, tab + 1);
    } else {
      const bool has_src = read_line(src_, pair.src, repaired);
      bool trg_repaired = false;
      const bool has_trg = read_line(trg_, pair.trg, trg_repaired);
      if (!has_src && !has_trg) return false;
      TFM_CHECK(has_src && has_trg)
          << "parallel corpus line counts differ: " << (has_src ? trg_path_ : src_path_)
          << " ends after line " << line_ << " but " << (has_src ? src_path_ : trg_path_)
          << " has a line " << line_ + 1;
      ++line_;
      ++stats_.pairs_read;
      if (repaired || trg_repaired) note_repaired(repaired ? src_path_ : trg_path_);
    }
    pair.line = line_;
    if (pair.src.empty() || pair.trg.empty()) {
      ++stats_.skipped_empty;
      continue;
    }
    ++stats_.pairs_kept;
    return true;
  }
}

SkipReason filter_pair(const Ids& src, const Ids& trg, const FilterOptions& options,
                       CorpusStats* stats) {
  SkipReason reason = SkipReason::none;
  const auto ls = static_cast<int64_t>(src.size()), lt = static_cast<int64_t>(trg.size());
  if ((options.sources && ls == 0) || lt == 0) {
    reason = SkipReason::empty;
  } else if (options.max_length > 0 && std::max(ls, lt) > options.max_length) {
    reason = SkipReason::too_long;
  } else if (options.sources && options.max_ratio > 0 &&
             static_cast<double>(std::max(ls, lt)) >
                 options.max_ratio * static_cast<double>(std::min(ls, lt))) {
    reason = SkipReason::ratio;
  }
  if (stats && reason != SkipReason::none) {
    --stats->pairs_kept;
    switch (reason) {
      case SkipReason::empty:
        ++stats->skipped_empty;
        break;
      case SkipReason::too_long:
        ++stats->skipped_too_long;
        break;
      case SkipReason::ratio:
        ++stats->skipped_ratio;
        break;
      case SkipReason::none:
        break;
    }
  }
  return reason;
}

std::vector<Example> read_examples(CorpusReader& reader, const Encoder& encode_src,
                                   const Encoder& encode_trg, const FilterOptions& options,
                                   std::vector<std::string>* kept_targets) {
  std::vector<Example> out;
  TextPair pair;
  while (reader.next(pair)) {
    Example e{encode_src(pair.src), encode_trg(pair.trg)};
    if (filter_pair(e.src, e.trg, options, &reader.stats()) == SkipReason::none) {
      out.push_back(std::move(e));
      if (kept_targets != nullptr) kept_targets->push_back(std::move(pair.trg));
    }
  }
  return out;
}

}  // namespace tfm
