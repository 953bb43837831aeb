#include "tfm/train/grad_norm.h"

#include <cmath>

#include "tfm/ops/optimizer.h"

namespace tfm {

double global_grad_norm(const std::vector<std::pair<std::string, Tensor>>& params) {
  std::vector<Tensor> grads;
  for (const auto& [name, p] : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    TFM_CHECK(g.dtype() == DType::f32) << "gradient of " << name << " is not f32";
    grads.push_back(g);
  }
  return std::sqrt(sum_of_squares(grads));
}

double global_grad_norm(const ParameterArena& arena) {
  std::vector<Tensor> grads;
  for (size_t k = 0; k < arena.slots().size(); ++k) grads.push_back(arena.view(arena.grads(), k));
  return std::sqrt(sum_of_squares(grads));
}

double clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  const double c = max_norm / (norm + 1e-6);
  return c < 1.0 ? c : 1.0;
}

}  // namespace tfm
