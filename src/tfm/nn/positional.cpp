#include "tfm/nn/positional.h"

#include <algorithm>
#include <cmath>

namespace tfm::nn {

// Both tables are computed in double and rounded once, so they match a float64 reference.
Tensor sinusoidal_table(int64_t length, int64_t d, int64_t offset) {
  std::vector<float> v(length * d);
  for (int64_t p = 0; p < length; ++p)
    for (int64_t j = 0; j < d; ++j) {
      const double angle =
          static_cast<double>(p + offset) / std::pow(10000.0, 2.0 * static_cast<double>(j / 2) / d);
      v[p * d + j] = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  return Tensor::from_vector<float>({length, d}, v);
}

Tensor sinusoidal_concat_table(int64_t length, int64_t d, int64_t offset) {
  const int64_t n = d / 2;
  const double inc = std::log(10000.0) / static_cast<double>(std::max<int64_t>(n - 1, 1));
  std::vector<float> v(length * d, 0.0f);
  for (int64_t p = 0; p < length; ++p)
    for (int64_t j = 0; j < n; ++j) {
      const double t = static_cast<double>(p + offset) * std::exp(-static_cast<double>(j) * inc);
      v[p * d + j] = static_cast<float>(std::sin(t));
      v[p * d + n + j] = static_cast<float>(std::cos(t));
    }
  return Tensor::from_vector<float>({length, d}, v);
}

Tensor sinusoidal_marian_table(int64_t length, int64_t d, int64_t offset) {
  const int64_t sines = (d + 1) / 2;
  std::vector<float> v(length * d);
  for (int64_t p = 0; p < length; ++p)
    for (int64_t c = 0; c < d; ++c) {
      const int64_t j = c < sines ? c : c - sines;  // the frequency's index in its half
      const double angle = static_cast<double>(p + offset) /
                           std::pow(10000.0, 2.0 * static_cast<double>(j) / static_cast<double>(d));
      v[p * d + c] = static_cast<float>(c < sines ? std::sin(angle) : std::cos(angle));
    }
  return Tensor::from_vector<float>({length, d}, v);
}

}  // namespace tfm::nn
