#include "tfm/eval/chrf.h"

#include <algorithm>
#include <compare>
#include <cstdio>
#include <set>
#include <string_view>

#include "tfm/core/check.h"
#include "tfm/eval/tokenizer_13a.h"

namespace tfm::eval {

namespace {

// A character n-gram (n <= 6) packed into 128 bits: code points (and the 0x110000 + byte stand-ins
// for invalid bytes) fit in 21 bits, three to a 64-bit word. Within one order the packing is
// injective, and sorted vectors of these keys replace hash maps of strings, which made chrF
// several times slower than BLEU.
struct NgramKey {
  uint64_t lo = 0, hi = 0;
  auto operator<=>(const NgramKey&) const = default;
};

// Per order, the sorted n-grams of a line (a multiset).
using CharNgrams = std::array<std::vector<NgramKey>, kChrfCharOrder>;

// helpers.extract_all_char_ngrams(line, 6, include_whitespace=False): "".join(line.split()), then
// every substring of length n, over code points (Python str), not bytes.
CharNgrams extract_char_ngrams(const std::string& line) {
  std::u32string chars;
  for (char32_t c : decode_utf8_lenient(line)) {
    if (!is_python_space(c)) chars.push_back(c);
  }
  CharNgrams grams;
  for (size_t n = 1; n <= kChrfCharOrder; ++n) {
    if (chars.size() < n) break;
    std::vector<NgramKey>& keys = grams[n - 1];
    keys.resize(chars.size() - n + 1);
    for (size_t i = 0; i + n <= chars.size(); ++i) {
      NgramKey k;
      for (size_t j = 0; j < n; ++j) {
        uint64_t& word = j < 3 ? k.lo : k.hi;
        word = (word << 21) | static_cast<uint64_t>(chars[i + j]);
      }
      keys[i] = k;
    }
    std::sort(keys.begin(), keys.end());
  }
  return grams;
}

// CHRF._get_match_statistics for every order: clipped matches are a merge of the two sorted
// multisets, sum over common n-grams of min(count in hyp, count in ref).
ChrfStats match_stats(const CharNgrams& hyp, const CharNgrams& ref) {
  ChrfStats st;
  for (int n = 0; n < kChrfCharOrder; ++n) {
    const std::vector<NgramKey>& h = hyp[n];
    const std::vector<NgramKey>& r = ref[n];
    int64_t match = 0;
    size_t i = 0, j = 0;
    while (i < h.size() && j < r.size()) {
      if (h[i] < r[j]) {
        ++i;
      } else if (r[j] < h[i]) {
        ++j;
      } else {
        ++match, ++i, ++j;  // pairing equal keys one to one counts min(count_h, count_r)
      }
    }
    // sacreBLEU: "Don't count hits if no reference exists for that n-gram" order.
    st.hyp[n] = r.empty() ? 0 : static_cast<int64_t>(h.size());
    st.ref[n] = static_cast<int64_t>(r.size());
    st.match[n] = match;
  }
  return st;
}

}  // namespace

double chrf_f_score(const ChrfStats& stats) {
  const double factor = kChrfBeta * kChrfBeta;
  double avg_prec = 0.0, avg_rec = 0.0;
  int effective_order = 0;
  for (int n = 0; n < kChrfCharOrder; ++n) {
    // Only orders with both sides present count (sacreBLEU < 2.0 style effective order, which
    // 2.x keeps as its default); the eps-smoothed per-order F sum is not used by default.
    if (stats.hyp[n] > 0 && stats.ref[n] > 0) {
      avg_prec += static_cast<double>(stats.match[n]) / static_cast<double>(stats.hyp[n]);
      avg_rec += static_cast<double>(stats.match[n]) / static_cast<double>(stats.ref[n]);
      ++effective_order;
    }
  }
  if (effective_order == 0) return 0.0;
  avg_prec /= effective_order;
  avg_rec /= effective_order;
  if (avg_prec + avg_rec == 0.0) return 0.0;
  // Same operation order as sacreBLEU: ((1 + f) * P) * R / ((f * P) + R), then * 100.
  double score = (1 + factor) * avg_prec * avg_rec;
  score /= (factor * avg_prec) + avg_rec;
  return 100 * score;
}

ChrfStats sentence_chrf_stats(const std::string& hyp, const std::string& ref) {
  return match_stats(extract_char_ngrams(hyp), extract_char_ngrams(ref));
}

ChrfScore corpus_chrf(const std::vector<std::string>& hyps,
                      const std::vector<std::vector<std::string>>& refs) {
  TFM_CHECK(!refs.empty()) << "chrf: no reference stream";
  for (size_t k = 0; k < refs.size(); ++k) {
    TFM_CHECK(refs[k].size() == hyps.size())
        << "chrf: " << hyps.size() << " hypotheses but reference stream " << k + 1 << " has "
        << refs[k].size() << " lines";
  }
  ChrfScore out;
  std::set<size_t> ref_counts_seen;
  for (size_t i = 0; i < hyps.size(); ++i) {
    const CharNgrams hyp = extract_char_ngrams(hyps[i]);
    ChrfStats best;
    double best_f = -1.0;
    size_t used = 0;
    for (const auto& stream : refs) {
      // sacreBLEU's CLI rstrips reference lines and Metric._cache_references drops empty ones.
      if (rstrip_python_whitespace(stream[i]).empty()) continue;
      ++used;
      const ChrfStats st = match_stats(hyp, extract_char_ngrams(stream[i]));
      const double f = chrf_f_score(st);
      if (f > best_f) {
        best_f = f;
        best = st;
      }
    }
    TFM_CHECK(used > 0) << "chrf: reference line " << i + 1
                        << " is empty (sacreBLEU rejects empty references)";
    ref_counts_seen.insert(used);
    for (int n = 0; n < kChrfCharOrder; ++n) {
      out.stats.hyp[n] += best.hyp[n];
      out.stats.ref[n] += best.ref[n];
      out.stats.match[n] += best.match[n];
    }
  }
  out.score = chrf_f_score(out.stats);
  if (ref_counts_seen.size() == 1) {
    out.nrefs = static_cast<int>(*ref_counts_seen.begin());
  } else if (ref_counts_seen.size() > 1) {
    out.nrefs = -1;
  } else {
    out.nrefs = static_cast<int>(refs.size());
  }
  return out;
}

std::string ChrfScore::format() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "chrF%d = %.2f", kChrfBeta, score);
  return buf;
}

std::string ChrfScore::signature() const {
  const std::string n = nrefs == -1 ? "var" : std::to_string(nrefs);
  return "nrefs:" + n + "|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.x-compatible (tfm)";
}

}  // namespace tfm::eval
