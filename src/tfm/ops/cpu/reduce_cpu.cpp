#include "tfm/ops/cpu/reduce_cpu.h"

#include <algorithm>
#include <vector>

#include "tfm/core/parallel.h"

namespace tfm::cpu {

namespace {

// Chunk boundaries of sum_all are multiples of kChunk whatever the thread count; the partial sums
// are then added in chunk order. That, not the partitioning among threads, fixes the rounding.
constexpr int64_t kChunk = 1 << 14;
constexpr int64_t kGrain = 1 << 14;  // elements per task for the row kernels
// Independent accumulators: lane l sums elements l, l + kLanes, ... . They vectorise without
// reassociation (no -ffast-math needed) and the order never depends on the data's address.
constexpr int kLanes = 16;

template <typename T>
double block_sum(const T* x, int64_t n) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += static_cast<double>(x[i + l]);
  for (int l = 0; i < n; ++i, ++l) acc[l] += static_cast<double>(x[i]);
  // Fixed pairwise tree over the lanes.
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  return acc[0];
}

}  // namespace

template <typename T>
double sum_all(int64_t n, const T* x) {
  if (n <= 0) return 0.0;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks == 1) return block_sum(x, n);
  std::vector<double> partial(chunks);
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      const int64_t lo = c * kChunk;
      partial[c] = block_sum(x + lo, std::min(kChunk, n - lo));
    }
  });
  double s = 0;
  for (double p : partial) s += p;
  return s;
}

template <typename T>
void sum_rows(int64_t rows, int64_t cols, const T* x, T* out) {
  // One row per task item: a row's sum never depends on how rows are shared out.
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(cols, 1));
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) out[r] = static_cast<T>(block_sum(x + r * cols, cols));
  });
}

template <typename T>
void broadcast_rows(int64_t rows, int64_t cols, const T* g, T s, T* out) {
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(cols, 1));
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T v = s * g[r];
      T* o = out + r * cols;
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) o[c] = v;
    }
  });
}

#define TFM_INSTANTIATE(T)                                   \
  template double sum_all<T>(int64_t, const T*);             \
  template void sum_rows<T>(int64_t, int64_t, const T*, T*); \
  template void broadcast_rows<T>(int64_t, int64_t, const T*, T, T*);
TFM_INSTANTIATE(float)
TFM_INSTANTIATE(double)
#undef TFM_INSTANTIATE

}  // namespace tfm::cpu
