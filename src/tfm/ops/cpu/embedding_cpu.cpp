#include "tfm/ops/cpu/embedding_cpu.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tfm/core/parallel.h"

namespace tfm::cpu {

namespace {
constexpr int64_t kGrain = 1 << 14;  // elements of C per task, roughly
}

int64_t find_bad_id(int64_t n, const int32_t* ids, int64_t v) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= v) return i;
  return -1;
}

template <typename T>
void embedding_forward(int64_t n, const int32_t* ids, int64_t c, const T* weight, T* out) {
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(c, 1));
  parallel_for(n, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      std::memcpy(out + i * c, weight + static_cast<int64_t>(ids[i]) * c, sizeof(T) * c);
  });
}

template <typename T>
void embedding_backward(int64_t n, const int32_t* ids, int64_t v, int64_t c, int64_t padding_idx,
                        const T* grad_out, T* grad_weight) {
  // Bucket positions by id (a stable counting sort): start[r]..start[r+1] lists, in increasing
  // order, the positions that looked up row r. Then each row is owned by exactly one thread and
  // summed in position order: no atomics, no order that depends on scheduling.
  std::vector<int64_t> start(v + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] != padding_idx) ++start[ids[i] + 1];
  for (int64_t r = 0; r < v; ++r) start[r + 1] += start[r];
  std::vector<int64_t> order(start[v]);
  {
    std::vector<int64_t> cursor(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < n; ++i)
      if (ids[i] != padding_idx) order[cursor[ids[i]]++] = i;
  }
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(c, 1));
  parallel_for(v, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      T* row = grad_weight + r * c;
      const int64_t k0 = start[r], k1 = start[r + 1];
      if (k0 == k1) {
        std::memset(row, 0, sizeof(T) * c);
        continue;
      }
      std::memcpy(row, grad_out + order[k0] * c, sizeof(T) * c);
      for (int64_t k = k0 + 1; k < k1; ++k) {
        const T* g = grad_out + order[k] * c;
#pragma omp simd
        for (int64_t j = 0; j < c; ++j) row[j] += g[j];
      }
    }
  });
}

#define TFM_INSTANTIATE(T)                                                                \
  template void embedding_forward<T>(int64_t, const int32_t*, int64_t, const T*, T*);     \
  template void embedding_backward<T>(int64_t, const int32_t*, int64_t, int64_t, int64_t, \
                                      const T*, T*);
TFM_INSTANTIATE(float)
TFM_INSTANTIATE(double)
#undef TFM_INSTANTIATE

}  // namespace tfm::cpu
