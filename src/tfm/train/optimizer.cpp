#include "tfm/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tfm/ops/linear.h"
#include "tfm/ops/optimizer.h"

namespace tfm {

Adam::Adam(std::vector<std::pair<std::string, Tensor>> params, AdamOptions options)
    : params_(std::move(params)), opt_(options) {
  TFM_CHECK(opt_.beta1 >= 0 && opt_.beta1 < 1 && opt_.beta2 >= 0 && opt_.beta2 < 1)
      << "adam: betas must be in [0, 1), got " << opt_.beta1 << ", " << opt_.beta2;
  TFM_CHECK(opt_.eps >= 0 && opt_.weight_decay >= 0) << "adam: eps and weight decay must be >= 0";
  arena_ = std::make_unique<ParameterArena>(params_);
  m_ = arena_->zeros_like();
  v_ = arena_->zeros_like();
  // Copies an earlier optimiser attached describe memory the new arena no longer uses.
  for (const auto& [name, p] : params_) attach_bf16_copy(p, Tensor());
}

Adam::~Adam() {
  if (!w16_.defined()) return;
  for (const auto& [name, p] : params_)
    if (p.autograd_meta()->bf16_copy.storage() == w16_.storage()) attach_bf16_copy(p, Tensor());
}

void Adam::keep_bf16_copies() {
  arena_->check_resident();
  if (!w16_.defined()) {
    w16_ = Tensor::empty({arena_->size()}, DType::bf16, arena_->device());
    for (size_t k = 0; k < params_.size(); ++k)
      attach_bf16_copy(params_[k].second, arena_->view(w16_, k));
  }
  refresh_bf16_copies();
}

void Adam::refresh_bf16_copies() {
  if (!w16_.defined()) return;
  // The gaps between slots are zeros in the parameter arena, so one rounding of the whole of it.
  round_to_bf16(arena_->params(), w16_);
}

void Adam::step(double lr, double grad_scale) {
  arena_->check_resident();
  arena_->adopt_gradients();
  ++step_;
  const kernels::AdamUpdate a = kernels::adam_update_for_step(
      step_, lr, opt_.beta1, opt_.beta2, opt_.eps, opt_.weight_decay, opt_.decoupled, grad_scale);
  // The slots with a gradient; the alignment gaps and parameters without one are left alone.
  std::vector<FlatRange> ranges;
  const std::vector<ArenaSlot>& slots = arena_->slots();
  for (size_t k = 0; k < slots.size(); ++k)
    if (arena_->has_grad(k)) ranges.push_back({slots[k].offset, slots[k].numel});
  adam_step(a, arena_->params(), arena_->grads(), m_, v_, ranges, w16_);
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
  refresh_bf16_copies();
}

}  // namespace tfm
