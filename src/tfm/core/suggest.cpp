#include "tfm/core/suggest.h"

#include <algorithm>
#include <cctype>

namespace tfm {

namespace {

// Lower case, '_' as '-', without the leading dashes: what the comparison sees of a name.
std::string normalized(std::string_view s) {
  s.remove_prefix(std::min(s.find_first_not_of('-'), s.size()));
  std::string out;
  for (char c : s)
    out += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Edits (insert, delete, substitute, swap of neighbours) from a to b: the optimal string
// alignment distance, which counts a typed transposition ("tranlsate") as one.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::vector<std::string> closest_names(std::string_view word,
                                       const std::vector<std::string>& known) {
  const std::string w = normalized(word);
  if (w.empty()) return {};
  const size_t limit = w.size() >= 3 ? std::max<size_t>(1, w.size() / 3) : 0;
  std::vector<std::string> best, prefixed;
  size_t best_distance = limit + 1;
  for (const std::string& name : known) {
    const std::string n = normalized(name);
    const size_t d = edit_distance(w, n);
    if (d <= limit && d < best_distance) {
      best.clear();
      best_distance = d;
    }
    if (d <= limit && d == best_distance) best.push_back(name);
    if (n.size() > w.size() && n.compare(0, w.size(), w) == 0) prefixed.push_back(name);
  }
  if (!best.empty()) return best;
  if (prefixed.size() <= 3) return prefixed;
  return {};
}

std::string one_of(const std::vector<std::string>& names, std::string_view quote) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) s += i + 1 == names.size() ? " or " : ", ";
    s += std::string(quote) + names[i] + std::string(quote);
  }
  return s;
}

}  // namespace tfm
