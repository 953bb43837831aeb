// Corpus BLEU exactly as sacreBLEU 2.x computes it by default (BLEU().corpus_score):
// 13a tokenisation of rstripped lines, case-sensitive, n-grams of order 1..4 with counts clipped
// by the reference (the per-n-gram maximum over references when there are several), the
// closest reference length per sentence (ties: the shorter), statistics summed over the corpus,
// brevity penalty exp(1 - r/c) when c < r, and 'exp' smoothing of zero-match orders.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tfm::eval {

inline constexpr int kBleuMaxOrder = 4;

// Sufficient statistics, summed over sentences (sacreBLEU's [sys_len, ref_len, correct, total]).
struct BleuStats {
  int64_t hyp_len = 0;
  int64_t ref_len = 0;
  std::array<int64_t, kBleuMaxOrder> correct{};  // clipped matches of order n+1
  std::array<int64_t, kBleuMaxOrder> total{};    // hypothesis n-grams of order n+1
};

struct BleuScore {
  double score = 0;                                // 0..100
  std::array<double, kBleuMaxOrder> precisions{};  // percent, after smoothing
  double bp = 0;                                   // brevity penalty
  double ratio = 0;                                // hyp_len / ref_len (0 when ref_len is 0)
  BleuStats stats;
  int nrefs = 1;  // references a sentence; -1 when it varies (sacreBLEU's "var")

  // "BLEU = 34.12 65.2/40.1/27.3/19.0 (BP = 0.981 ratio = 0.981 hyp_len = 12345 ref_len = 12580)"
  std::string format() const;
  // "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.x-compatible (tfm)"
  std::string signature() const;
};

// The score from summed statistics (sacreBLEU's BLEU.compute_bleu with smooth_method='exp').
BleuScore compute_bleu(const BleuStats& stats);

// Statistics of one sentence against its references (raw lines: they are rstripped and
// tokenised here). Empty references must already be dropped.
BleuStats sentence_bleu_stats(const std::string& hyp, const std::vector<std::string>& refs);

// refs[k] is the k-th reference stream, one line per hypothesis. Per sentence, empty (after
// rstrip) references are skipped, as sacreBLEU does; a sentence left with none is an error,
// as it is in sacreBLEU. Throws tfm::Error when a stream's length differs from hyps'.
BleuScore corpus_bleu(const std::vector<std::string>& hyps,
                      const std::vector<std::vector<std::string>>& refs);

}  // namespace tfm::eval
