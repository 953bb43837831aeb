#include "tfm/train/grad_norm.h"

#include <algorithm>
#include <cmath>

#include "tfm/core/parallel.h"

namespace tfm {

double global_grad_norm(const std::vector<std::pair<std::string, Tensor>>& params) {
  double total = 0.0;
  for (const auto& [name, p] : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    Tensor gc = g.contiguous();
    TFM_CHECK(gc.dtype() == DType::f32) << "gradient of " << name << " is not f32";
    const float* x = gc.data<float>();
    const int64_t n = gc.numel();
    constexpr int64_t grain = 1 << 15;
    // Partial sums per fixed-size chunk, added in order: the same value for any thread count.
    const int64_t chunks = (n + grain - 1) / grain;
    std::vector<double> partial(chunks, 0.0);
    parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        double s = 0.0;
        const int64_t e = std::min(n, (c + 1) * grain);
        for (int64_t i = c * grain; i < e; ++i) s += static_cast<double>(x[i]) * x[i];
        partial[c] = s;
      }
    });
    for (double s : partial) total += s;
  }
  return std::sqrt(total);
}

double clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  const double c = max_norm / (norm + 1e-6);
  return c < 1.0 ? c : 1.0;
}

}  // namespace tfm
