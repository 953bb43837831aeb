#include "tfm/train/grad_norm.h"

#include <algorithm>
#include <cmath>

#include "tfm/core/parallel.h"

namespace tfm {

namespace {

constexpr int64_t kGrain = 1 << 15;

struct Chunk {
  const float* x;
  int64_t n;
};

// Appends the chunks of one gradient of n elements.
void add_chunks(const float* x, int64_t n, std::vector<Chunk>& out) {
  for (int64_t b = 0; b < n; b += kGrain) out.push_back({x + b, std::min(kGrain, n - b)});
}

// sqrt of the ordered sum of every chunk's Σ x² (each in double).
double norm_of_chunks(const std::vector<Chunk>& chunks) {
  std::vector<double> partial(chunks.size(), 0.0);
  parallel_for(static_cast<int64_t>(chunks.size()), 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      const float* x = chunks[c].x;
      double s = 0.0;
      for (int64_t i = 0; i < chunks[c].n; ++i) s += static_cast<double>(x[i]) * x[i];
      partial[c] = s;
    }
  });
  double total = 0.0;
  for (double s : partial) total += s;
  return std::sqrt(total);
}

}  // namespace

double global_grad_norm(const std::vector<std::pair<std::string, Tensor>>& params) {
  std::vector<Tensor> keep;  // contiguous copies of strided gradients (none in an arena)
  std::vector<Chunk> chunks;
  for (const auto& [name, p] : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    TFM_CHECK(g.dtype() == DType::f32) << "gradient of " << name << " is not f32";
    if (!g.is_contiguous()) {
      keep.push_back(g.contiguous());
      g = keep.back();
    }
    add_chunks(g.data<float>(), g.numel(), chunks);
  }
  return norm_of_chunks(chunks);
}

double global_grad_norm(const ParameterArena& arena) {
  std::vector<Chunk> chunks;
  const float* g = arena.grad_data();
  for (const ArenaSlot& s : arena.slots()) add_chunks(g + s.offset, s.numel, chunks);
  return norm_of_chunks(chunks);
}

double clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  const double c = max_norm / (norm + 1e-6);
  return c < 1.0 ? c : 1.0;
}

}  // namespace tfm
