#include "tfm/ops/cpu/dropout_cpu.h"

#include <cmath>

#include "tfm/core/parallel.h"

namespace tfm::cpu {

namespace {
constexpr int64_t kGrainBlocks = 1 << 12;  // Philox blocks (4 elements each) per task
}

template <typename T>
void dropout_apply(int64_t n, const T* x, const RandomStream& stream, double p, T* out) {
  // stream.uniform(i) is m / 2^24 with m the top 24 bits of word i, and p * 2^24 is exact, so
  // uniform(i) >= p  <=>  m >= ceil(p * 2^24): an integer test with the very same outcome.
  const uint32_t threshold = static_cast<uint32_t>(std::ceil(p * 16777216.0));
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  const int64_t blocks = (n + 3) / 4;
  parallel_for(blocks, kGrainBlocks, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const auto w = stream.block(static_cast<uint64_t>(b));
      const int64_t base = 4 * b;
      const int64_t m = n - base < 4 ? n - base : 4;
      for (int64_t l = 0; l < m; ++l)
        out[base + l] = (w[l] >> 8) >= threshold ? x[base + l] * scale : T(0);
    }
  });
}

template void dropout_apply<float>(int64_t, const float*, const RandomStream&, double, float*);
template void dropout_apply<double>(int64_t, const double*, const RandomStream&, double, double*);

}  // namespace tfm::cpu
