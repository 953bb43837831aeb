#include "tfm/train/data_parallel.h"

#include <algorithm>
#include <cstring>

#include "tfm/core/autograd_meta.h"
#include "tfm/core/check.h"

namespace tfm {

void sum_gradients(dist::World& world, const std::vector<std::pair<std::string, Tensor>>& params) {
  if (world.size() == 1) return;
  int64_t total = 0;
  for (const auto& [name, p] : params) total += p.numel();
  std::vector<float> flat(static_cast<size_t>(total), 0.0f);
  int64_t at = 0;
  for (const auto& [name, p] : params) {
    const Tensor g = p.grad();
    if (g.defined()) {
      const Tensor gc = g.contiguous();
      TFM_CHECK(gc.dtype() == DType::f32) << "gradient of " << name << " is not f32";
      std::memcpy(flat.data() + at, gc.data<float>(), sizeof(float) * gc.numel());
    }
    at += p.numel();
  }
  world.sum_in_rank_order(flat);
  at = 0;
  for (const auto& [name, p] : params) {
    // A fresh gradient tensor: the old one may alias another tensor (AutogradMeta::grad_owned).
    Tensor g = Tensor::empty(p.shape(), DType::f32);
    std::memcpy(g.data<float>(), flat.data() + at, sizeof(float) * p.numel());
    AutogradMeta& meta = *p.autograd_meta();
    meta.grad = g;
    meta.grad_owned = true;
    at += p.numel();
  }
}

}  // namespace tfm
