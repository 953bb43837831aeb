// Corpus chrF exactly as sacreBLEU 2.x computes it by default (CHRF().corpus_score): character
// n-grams of order 1..6 over code points with all whitespace removed, case-sensitive, no word
// n-grams, beta = 2, [hyp, ref, match] counts summed over sentences, then precision and recall
// averaged over the orders that have both hypothesis and reference n-grams ("effective order",
// not eps smoothing), and F-beta of the averages.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tfm::eval {

inline constexpr int kChrfCharOrder = 6;
inline constexpr int kChrfBeta = 2;

// Per order n (index n-1): hypothesis n-grams (0 when the reference has none of that order, as
// sacreBLEU counts them), reference n-grams, and clipped matches.
struct ChrfStats {
  std::array<int64_t, kChrfCharOrder> hyp{};
  std::array<int64_t, kChrfCharOrder> ref{};
  std::array<int64_t, kChrfCharOrder> match{};
};

struct ChrfScore {
  double score = 0;  // 0..100
  ChrfStats stats;
  int nrefs = 1;  // -1 when it varies ("var")

  std::string format() const;     // "chrF2 = 58.31"
  std::string signature() const;  // "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:..."
};

// sacreBLEU's CHRF._compute_f_score (eps_smoothing=False), in 0..100.
double chrf_f_score(const ChrfStats& stats);

// Statistics of one sentence against one reference.
ChrfStats sentence_chrf_stats(const std::string& hyp, const std::string& ref);

// refs[k] is the k-th reference stream. Per sentence, empty references are skipped and, with
// several, the one with the best sentence chrF is used (the first on ties), as in sacreBLEU.
ChrfScore corpus_chrf(const std::vector<std::string>& hyps,
                      const std::vector<std::vector<std::string>>& refs);

}  // namespace tfm::eval
