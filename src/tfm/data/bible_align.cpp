#include "tfm/data/bible_align.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "tfm/core/check.h"

namespace tfm {

std::string BibleAlignStats::summary() const {
  std::ostringstream s;
  s << "pairs: " << pairs << "; dropped: " << only_src << " source verses and " << only_trg
    << " target verses whose key the other module lacks, " << empty << " with a side empty, "
    << renumbered << " numbered differently";
  auto list = [&](const char* what, const std::vector<std::string>& names) {
    if (names.empty()) return;
    s << "\n  " << what << ":";
    for (const std::string& n : names) s << " " << n << (&n == &names.back() ? "" : ",");
  };
  list("books in the source only", books_only_src);
  list("books in the target only", books_only_trg);
  if (length_ratio > 0) {
    s << "\n  numbering check (target length ~ " << length_ratio << " x source, variance "
      << length_variance << " per character)";
  }
  list("numbered differently", renumbered_chapters);
  return s.str();
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// -log(2 (1 - Phi(|delta|))): the two-sided tail of a standard normal, without underflow.
double tail_cost(double delta) {
  const double x = std::abs(delta) / std::sqrt(2.0);
  if (x < 26) return -std::log(std::erfc(x));
  return x * x + std::log(x * std::sqrt(M_PI));  // erfc(x) ~ exp(-x²) / (x sqrt(pi))
}

struct Bead {
  int src, trg;  // verses taken from each side
  double cost;   // -log prior
};

const Bead kBeads[] = {{1, 1, -std::log(0.99)},
                       {1, 0, -std::log(1e-4)},
                       {0, 1, -std::log(1e-4)},
                       {2, 1, -std::log(1e-3)},
                       {1, 2, -std::log(1e-3)}};

int64_t chars(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; });
}

}  // namespace

std::vector<bool> same_numbering(const std::vector<int64_t>& src_lengths,
                                 const std::vector<int64_t>& trg_lengths, double ratio,
                                 double variance) {
  TFM_CHECK(src_lengths.size() == trg_lengths.size())
      << "same_numbering: " << src_lengths.size() << " source and " << trg_lengths.size()
      << " target verses";
  TFM_CHECK(ratio > 0 && variance > 0)
      << "same_numbering: ratio " << ratio << " and variance " << variance << " must be > 0";
  const size_t n = src_lengths.size();
  auto match = [&](int64_t l1, int64_t l2) {
    const double mean =
        std::max(1.0, (static_cast<double>(l1) + static_cast<double>(l2) / ratio) / 2);
    return tail_cost((static_cast<double>(l2) - ratio * static_cast<double>(l1)) /
                     std::sqrt(variance * mean));
  };
  // cost[i][j]: the best alignment of the first i source and j target verses.
  std::vector<std::vector<double>> cost(n + 1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<int>> step(n + 1, std::vector<int>(n + 1, -1));
  cost[0][0] = 0;
  for (size_t i = 0; i <= n; ++i) {
    for (size_t j = 0; j <= n; ++j) {
      for (int b = 0; b < 5; ++b) {
        const Bead& bead = kBeads[b];
        if (i < static_cast<size_t>(bead.src) || j < static_cast<size_t>(bead.trg)) continue;
        const size_t pi = i - bead.src, pj = j - bead.trg;
        if (cost[pi][pj] == kInf) continue;
        double c = cost[pi][pj] + bead.cost;
        if (bead.src > 0 && bead.trg > 0) {
          int64_t l1 = 0, l2 = 0;
          for (size_t k = pi; k < i; ++k) l1 += src_lengths[k];
          for (size_t k = pj; k < j; ++k) l2 += trg_lengths[k];
          c += match(l1, l2);
        }
        if (c < cost[i][j]) {
          cost[i][j] = c;
          step[i][j] = b;
        }
      }
    }
  }
  std::vector<bool> same(n, false);
  for (size_t i = n, j = n; i > 0 || j > 0;) {
    const Bead& bead = kBeads[step[i][j]];
    if (bead.src == 1 && bead.trg == 1 && i == j) same[i - 1] = true;
    i -= bead.src;
    j -= bead.trg;
  }
  return same;
}

namespace {

using Key = std::tuple<std::string, int, int>;

Key key_of(const VerseKey& k) {
  return {k.book, k.chapter, k.verse};
}

// c: the ratio of total lengths; s²: the median squared residual over the median of a χ²(1)
// variable (0.4549), which the few misnumbered pairs cannot inflate.
void fit_length_model(const std::vector<BiblePair>& pairs, double& ratio, double& variance) {
  double total_src = 0, total_trg = 0;
  for (const BiblePair& p : pairs) {
    total_src += static_cast<double>(chars(p.src));
    total_trg += static_cast<double>(chars(p.trg));
  }
  ratio = total_src > 0 ? total_trg / total_src : 1.0;
  std::vector<double> squares;
  for (const BiblePair& p : pairs) {
    const double l1 = static_cast<double>(chars(p.src)), l2 = static_cast<double>(chars(p.trg));
    const double r = (l2 - ratio * l1) / std::sqrt(std::max(1.0, (l1 + l2 / ratio) / 2));
    squares.push_back(r * r);
  }
  variance = 1.0;
  if (!squares.empty()) {
    std::nth_element(squares.begin(), squares.begin() + squares.size() / 2, squares.end());
    variance = std::max(1e-3, squares[squares.size() / 2] / 0.4549);
  }
}

// Drops the pairs of each chapter that same_numbering does not confirm.
std::vector<BiblePair> check_numbering(std::vector<BiblePair> pairs, BibleAlignStats& stats) {
  fit_length_model(pairs, stats.length_ratio, stats.length_variance);
  std::vector<BiblePair> kept;
  for (size_t begin = 0; begin < pairs.size();) {
    size_t end = begin;
    while (end < pairs.size() && pairs[end].key.book == pairs[begin].key.book &&
           pairs[end].key.chapter == pairs[begin].key.chapter) {
      ++end;
    }
    std::vector<int64_t> l1, l2;
    for (size_t i = begin; i < end; ++i) {
      l1.push_back(chars(pairs[i].src));
      l2.push_back(chars(pairs[i].trg));
    }
    const std::vector<bool> same =
        same_numbering(l1, l2, stats.length_ratio, stats.length_variance);
    const int64_t dropped = std::count(same.begin(), same.end(), false);
    if (dropped > 0) {
      stats.renumbered += dropped;
      stats.renumbered_chapters.push_back(
          pairs[begin].key.book + " " + std::to_string(pairs[begin].key.chapter) + " (" +
          std::to_string(dropped) + " of " + std::to_string(end - begin) + ")");
    }
    for (size_t i = begin; i < end; ++i) {
      if (same[i - begin]) kept.push_back(std::move(pairs[i]));
    }
    begin = end;
  }
  return kept;
}

std::vector<std::string> books_missing_from(const BibleModule& a, const BibleModule& b) {
  std::vector<std::string> out;
  for (const std::string& book : a.books) {
    if (std::find(b.books.begin(), b.books.end(), book) == b.books.end()) out.push_back(book);
  }
  return out;
}

}  // namespace

std::vector<BiblePair> align_bibles(const BibleModule& src, const BibleModule& trg,
                                    const BibleAlignOptions& options, BibleAlignStats& stats) {
  std::map<Key, const BibleVerse*> trg_of;
  for (const BibleVerse& v : trg.verses) trg_of.emplace(key_of(v.key), &v);
  std::set<Key> src_keys;
  std::vector<BiblePair> pairs;
  for (const BibleVerse& v : src.verses) {
    src_keys.insert(key_of(v.key));
    const auto it = trg_of.find(key_of(v.key));
    if (it == trg_of.end()) {
      ++stats.only_src;
    } else if (v.text.empty() || it->second->text.empty()) {
      ++stats.empty;
    } else {
      pairs.push_back({v.key, v.text, it->second->text});
    }
  }
  for (const BibleVerse& v : trg.verses) {
    if (!src_keys.count(key_of(v.key))) ++stats.only_trg;
  }
  stats.books_only_src = books_missing_from(src, trg);
  stats.books_only_trg = books_missing_from(trg, src);
  TFM_CHECK(!pairs.empty()) << "no verse of " << src.name << " has its key in " << trg.name << " ("
                            << src.verses.size() << " and " << trg.verses.size()
                            << " verses; do both modules use the same versification?)";
  if (options.check_numbering) pairs = check_numbering(std::move(pairs), stats);
  stats.pairs = static_cast<int64_t>(pairs.size());
  return pairs;
}

}  // namespace tfm
