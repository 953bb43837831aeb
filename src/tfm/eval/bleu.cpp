#include "tfm/eval/bleu.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string_view>
#include <unordered_map>

#include "tfm/core/check.h"
#include "tfm/eval/tokenizer_13a.h"

namespace tfm::eval {

namespace {

// One map per order; keys are the tokens joined by single spaces (tokens never contain one).
using NgramCounts = std::array<std::unordered_map<std::string, int64_t>, kBleuMaxOrder>;

// BLEU._preprocess_segment: tokenizer(sent.rstrip()); then helpers.extract_all_word_ngrams.
NgramCounts extract_ngrams(const std::string& line, int64_t& length) {
  const std::string tokenized = tokenize_13a(rstrip_python_whitespace(line));
  const std::vector<std::string_view> tokens = split_python_whitespace(tokenized);
  length = static_cast<int64_t>(tokens.size());
  NgramCounts counts;
  for (int n = 1; n <= kBleuMaxOrder; ++n) {
    for (size_t i = 0; i + n <= tokens.size(); ++i) {
      // The tokens are consecutive in `tokenized`, separated by one space: one substring.
      const char* begin = tokens[i].data();
      const char* end = tokens[i + n - 1].data() + tokens[i + n - 1].size();
      ++counts[n - 1][std::string(begin, end)];
    }
  }
  return counts;
}

// Python's math.log guard in sacreBLEU (utils.my_log): log(0) is a huge negative number, not -inf.
double my_log(double x) {
  return x == 0.0 ? -9999999999.0 : std::log(x);
}

}  // namespace

BleuScore compute_bleu(const BleuStats& stats) {
  BleuScore s;
  s.stats = stats;
  const int64_t sys_len = stats.hyp_len, ref_len = stats.ref_len;
  s.ratio = ref_len ? static_cast<double>(sys_len) / static_cast<double>(ref_len) : 0.0;
  if (sys_len < ref_len) {
    s.bp = sys_len > 0 ? std::exp(1.0 - static_cast<double>(ref_len) / static_cast<double>(sys_len))
                       : 0.0;
  } else {
    s.bp = 1.0;
  }
  // sacreBLEU stops early with all-zero precisions when nothing at all matched (its issue #141).
  bool any_correct = false;
  for (int64_t c : stats.correct) any_correct = any_correct || c != 0;
  if (!any_correct) return s;

  double smooth_mteval = 1.0;
  for (int n = 0; n < kBleuMaxOrder; ++n) {
    const int64_t total = stats.total[n];
    // No n-grams of this order at all: this and higher precisions stay 0 (score becomes 0).
    if (total == 0) break;
    if (stats.correct[n] == 0) {
      // 'exp' smoothing (NIST/mteval-v13a): each successive zero-match order halves again.
      smooth_mteval *= 2;
      s.precisions[n] = 100.0 / (smooth_mteval * static_cast<double>(total));
    } else {
      s.precisions[n] = 100.0 * static_cast<double>(stats.correct[n]) / static_cast<double>(total);
    }
  }
  // Same order of operations as sacreBLEU (sum of logs from 0, / order, exp, * bp) so that the
  // last bits agree too.
  double log_sum = 0.0;
  for (double p : s.precisions) log_sum += my_log(p);
  s.score = s.bp * std::exp(log_sum / kBleuMaxOrder);
  return s;
}

BleuStats sentence_bleu_stats(const std::string& hyp, const std::vector<std::string>& refs) {
  TFM_CHECK(!refs.empty()) << "bleu: a sentence needs at least one reference";
  // References: n-gram counts merged by maximum, and every length kept.
  NgramCounts ref_counts;
  std::vector<int64_t> ref_lens;
  for (const std::string& ref : refs) {
    int64_t len = 0;
    NgramCounts c = extract_ngrams(ref, len);
    ref_lens.push_back(len);
    if (ref_lens.size() == 1) {
      ref_counts = std::move(c);
      continue;
    }
    for (int n = 0; n < kBleuMaxOrder; ++n) {
      for (const auto& [ngram, count] : c[n]) {
        int64_t& have = ref_counts[n][ngram];
        if (count > have) have = count;
      }
    }
  }
  BleuStats st;
  const NgramCounts hyp_counts = extract_ngrams(hyp, st.hyp_len);
  // BLEU._get_closest_ref_len: smallest |hyp - ref|, ties to the shorter reference.
  int64_t closest_diff = -1, closest_len = -1;
  for (int64_t len : ref_lens) {
    const int64_t diff = std::llabs(st.hyp_len - len);
    if (closest_diff == -1 || diff < closest_diff) {
      closest_diff = diff;
      closest_len = len;
    } else if (diff == closest_diff && len < closest_len) {
      closest_len = len;
    }
  }
  st.ref_len = closest_len;
  for (int n = 0; n < kBleuMaxOrder; ++n) {
    for (const auto& [ngram, count] : hyp_counts[n]) {
      st.total[n] += count;
      const auto it = ref_counts[n].find(ngram);
      if (it != ref_counts[n].end()) st.correct[n] += std::min(count, it->second);
    }
  }
  return st;
}

BleuScore corpus_bleu(const std::vector<std::string>& hyps,
                      const std::vector<std::vector<std::string>>& refs) {
  TFM_CHECK(!refs.empty()) << "bleu: no reference stream";
  for (size_t k = 0; k < refs.size(); ++k) {
    TFM_CHECK(refs[k].size() == hyps.size())
        << "bleu: " << hyps.size() << " hypotheses but reference stream " << k + 1 << " has "
        << refs[k].size() << " lines";
  }
  BleuStats sum;
  std::set<size_t> ref_counts_seen;
  std::vector<std::string> sentence_refs;
  for (size_t i = 0; i < hyps.size(); ++i) {
    // sacreBLEU's CLI rstrips reference lines and Metric._cache_references drops empty ones.
    sentence_refs.clear();
    for (const auto& stream : refs) {
      if (!rstrip_python_whitespace(stream[i]).empty()) sentence_refs.push_back(stream[i]);
    }
    TFM_CHECK(!sentence_refs.empty())
        << "bleu: reference line " << i + 1 << " is empty (sacreBLEU rejects empty references)";
    ref_counts_seen.insert(sentence_refs.size());
    const BleuStats st = sentence_bleu_stats(hyps[i], sentence_refs);
    sum.hyp_len += st.hyp_len;
    sum.ref_len += st.ref_len;
    for (int n = 0; n < kBleuMaxOrder; ++n) {
      sum.correct[n] += st.correct[n];
      sum.total[n] += st.total[n];
    }
  }
  BleuScore score = compute_bleu(sum);
  if (ref_counts_seen.size() == 1) {
    score.nrefs = static_cast<int>(*ref_counts_seen.begin());
  } else if (ref_counts_seen.size() > 1) {
    score.nrefs = -1;
  } else {
    score.nrefs = static_cast<int>(refs.size());  // empty corpus
  }
  return score;
}

std::string BleuScore::format() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %lld "
                "ref_len = %lld)",
                score, precisions[0], precisions[1], precisions[2], precisions[3], bp, ratio,
                static_cast<long long>(stats.hyp_len), static_cast<long long>(stats.ref_len));
  return buf;
}

std::string BleuScore::signature() const {
  const std::string n = nrefs == -1 ? "var" : std::to_string(nrefs);
  return "nrefs:" + n + "|case:mixed|eff:no|tok:13a|smooth:exp|version:2.x-compatible (tfm)";
}

}  // namespace tfm::eval
