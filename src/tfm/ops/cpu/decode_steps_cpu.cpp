#include "tfm/ops/cpu/decode_steps_cpu.h"

namespace tfm::cpu {

void top_k_row(const float* row, int64_t v, int64_t k, int32_t* ids, float* vals) {
  if (k <= 0) return;
  int64_t n = 0;  // kept so far, ids[0, n) in order
  auto offer = [&](int32_t i) {
    const float x = row[i];
    const bool full = n == k;
    if (full && !(x > vals[n - 1])) return;
    // After every kept value >= x: equal values keep the lower id first.
    int64_t p = n;
    while (p > 0 && vals[p - 1] < x) --p;
    const int64_t last = full ? k - 1 : n;  // the slot that is overwritten by the shift
    for (int64_t j = last; j > p; --j) {
      ids[j] = ids[j - 1];
      vals[j] = vals[j - 1];
    }
    ids[p] = i;
    vals[p] = x;
    if (!full) ++n;
  };
  constexpr int64_t kBlock = 16;
  int64_t i = 0;
  for (; i < v && n < k; ++i) offer(static_cast<int32_t>(i));
  for (; i + kBlock <= v; i += kBlock) {
    const float worst = vals[k - 1];
    bool any = false;
    for (int64_t j = 0; j < kBlock; ++j) any |= row[i + j] > worst;
    if (any)
      for (int64_t j = 0; j < kBlock; ++j) offer(static_cast<int32_t>(i + j));
  }
  for (; i < v; ++i) offer(static_cast<int32_t>(i));
}

}  // namespace tfm::cpu
