#include "tfm/data/length_batches.h"

#include <algorithm>
#include <numeric>

#include "tfm/core/check.h"

namespace tfm {

std::vector<std::vector<size_t>> length_batches(const std::vector<int64_t>& lengths,
                                                const BatchLimits& limits) {
  TFM_CHECK(limits.max_sentences > 0)
      << "batch size must be at least 1 sentence (got " << limits.max_sentences << ")";
  TFM_CHECK(limits.max_tokens >= 0)
      << "batch token limit must be positive or 0 for none (got " << limits.max_tokens << ")";
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lengths[a] < lengths[b]; });
  std::vector<std::vector<size_t>> batches;
  std::vector<size_t> cur;
  for (size_t i : order) {
    // Sorted ascending, so the newcomer is the longest of the batch it would join.
    const int64_t padded = static_cast<int64_t>(cur.size() + 1) * lengths[i];
    const bool full = static_cast<int64_t>(cur.size()) >= limits.max_sentences ||
                      (limits.max_tokens > 0 && !cur.empty() && padded > limits.max_tokens);
    if (full) batches.push_back(std::move(cur)), cur.clear();
    cur.push_back(i);
  }
  if (!cur.empty()) batches.push_back(std::move(cur));
  return batches;
}

}  // namespace tfm
