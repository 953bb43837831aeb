#include "tfm/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/adam_cpu.h"

namespace tfm {

Adam::Adam(std::vector<std::pair<std::string, Tensor>> params, AdamOptions options)
    : params_(std::move(params)), opt_(options) {
  TFM_CHECK(opt_.beta1 >= 0 && opt_.beta1 < 1 && opt_.beta2 >= 0 && opt_.beta2 < 1)
      << "adam: betas must be in [0, 1), got " << opt_.beta1 << ", " << opt_.beta2;
  TFM_CHECK(opt_.eps >= 0 && opt_.weight_decay >= 0) << "adam: eps and weight decay must be >= 0";
  arena_ = std::make_unique<ParameterArena>(params_);
  m_ = arena_->zeros_like();
  v_ = arena_->zeros_like();
}

void Adam::step(double lr, double grad_scale) {
  arena_->check_resident();
  arena_->adopt_gradients();
  ++step_;
  const double bc1 = 1.0 - std::pow(opt_.beta1, static_cast<double>(step_));
  const double bc2 = 1.0 - std::pow(opt_.beta2, static_cast<double>(step_));
  cpu::AdamUpdate a;
  a.step_size = static_cast<float>(lr / bc1);
  a.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  a.beta1 = static_cast<float>(opt_.beta1);
  a.beta2 = static_cast<float>(opt_.beta2);
  a.eps = static_cast<float>(opt_.eps);
  a.weight_decay = static_cast<float>(opt_.weight_decay);
  a.coupled_wd = !opt_.decoupled && a.weight_decay != 0.0f;
  a.decay = opt_.decoupled ? static_cast<float>(1.0 - lr * opt_.weight_decay) : 1.0f;
  a.grad_scale = static_cast<float>(grad_scale);
  const std::vector<ArenaSlot>& slots = arena_->slots();
  std::vector<char> has(slots.size());
  for (size_t k = 0; k < slots.size(); ++k) has[k] = arena_->has_grad(k);
  float* p = arena_->param_data();
  const float* g = arena_->grad_data();
  float* m = m_.data<float>();
  float* v = v_.data<float>();
  // One pass over the arenas: each thread takes a range of elements and updates the part of
  // every slot inside it (the alignment gaps and parameters without a gradient are skipped).
  // The arithmetic is per element (ops/cpu/adam_cpu.h), so the split does not change a bit.
  parallel_for(arena_->size(), 1 << 14, [&](int64_t b, int64_t e) {
    auto k = static_cast<size_t>(
        std::partition_point(slots.begin(), slots.end(),
                             [b](const ArenaSlot& sl) { return sl.offset + sl.numel <= b; }) -
        slots.begin());
    for (; k < slots.size() && slots[k].offset < e; ++k) {
      if (!has[k]) continue;
      const int64_t lo = std::max(b, slots[k].offset);
      const int64_t hi = std::min(e, slots[k].offset + slots[k].numel);
      if (lo < hi) cpu::adam_update(a, hi - lo, p + lo, g + lo, m + lo, v + lo);
    }
  });
}

void Adam::zero_grad() {
  arena_->zero_grad();
}

std::vector<std::pair<std::string, Tensor>> Adam::state() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t k = 0; k < params_.size(); ++k) {
    out.emplace_back("m." + params_[k].first, arena_->view(m_, k));
    out.emplace_back("v." + params_[k].first, arena_->view(v_, k));
  }
  return out;
}

void Adam::load_state(const std::vector<std::pair<std::string, Tensor>>& state, int64_t steps) {
  std::map<std::string, Tensor> by_name(state.begin(), state.end());
  for (size_t k = 0; k < params_.size(); ++k) {
    for (auto [prefix, flat] : {std::pair{"m.", &m_}, {"v.", &v_}}) {
      Tensor dst = arena_->view(*flat, k);
      auto it = by_name.find(prefix + params_[k].first);
      TFM_CHECK(it != by_name.end()) << "optimizer state lacks " << prefix << params_[k].first;
      TFM_CHECK(it->second.shape() == dst.shape() && it->second.dtype() == DType::f32)
          << "optimizer state " << it->first << " is " << it->second.describe() << ", expected f32 "
          << shape_str(dst.shape());
      dst.copy_(it->second);
    }
  }
  TFM_CHECK(steps >= 0) << "optimizer state: negative step count";
  step_ = steps;
}

}  // namespace tfm
