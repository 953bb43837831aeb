#include "tfm/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tfm/core/parallel.h"

namespace tfm {

namespace {

// The per-step constants of Adam::step, in the precision the update uses.
struct AdamScalars {
  float step_size, inv_sqrt_bc2, b1, b2, eps, wd, gs, decay;
  bool coupled_wd;
};

// Elements [0, n) of one parameter: torch's update, with the four multiply-adds written as
// std::fma (one rounding each; an FMA instruction on x86-64-v3). They are the fusions GCC made
// when it contracted the plain expressions of the per-parameter loop this replaced, so the bits
// are the same, and written out they no longer depend on what the compiler contracts (moving the
// loop had made it fuse g·scale instead of wd·p under coupled weight decay).
void adam_update(const AdamScalars& s, float* p, const float* g, float* m, float* v, int64_t n) {
  const float b1 = s.b1, b2 = s.b2, gs = s.gs, wd = s.wd, eps = s.eps, decay = s.decay;
  const float step_size = s.step_size, inv_sqrt_bc2 = s.inv_sqrt_bc2;
  const bool coupled_wd = s.coupled_wd;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float gg = g[i] * gs;
    const float gi = coupled_wd ? std::fma(wd, p[i], gg) : gg;
    m[i] = std::fma(b1, m[i], (1.0f - b1) * gi);
    v[i] = std::fma(b2, v[i], (1.0f - b2) * gi * gi);
    const float denom = std::fma(std::sqrt(v[i]), inv_sqrt_bc2, eps);
    p[i] = std::fma(p[i], decay, -(step_size * m[i] / denom));
  }
}

}  // namespace

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
  AdamScalars s;
  s.step_size = static_cast<float>(lr / bc1);
  s.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  s.b1 = static_cast<float>(opt_.beta1);
  s.b2 = static_cast<float>(opt_.beta2);
  s.eps = static_cast<float>(opt_.eps);
  s.wd = static_cast<float>(opt_.weight_decay);
  s.gs = static_cast<float>(grad_scale);
  s.decay = opt_.decoupled ? static_cast<float>(1.0 - lr * opt_.weight_decay) : 1.0f;
  s.coupled_wd = !opt_.decoupled && s.wd != 0.0f;
  const std::vector<ArenaSlot>& slots = arena_->slots();
  std::vector<char> has(slots.size());
  for (size_t k = 0; k < slots.size(); ++k) has[k] = arena_->has_grad(k);
  float* p = arena_->param_data();
  const float* g = arena_->grad_data();
  float* m = m_.data<float>();
  float* v = v_.data<float>();
  // One pass over the arenas: each thread takes a range of elements and updates the part of
  // every slot inside it (the alignment gaps and parameters without a gradient are skipped).
  parallel_for(arena_->size(), 1 << 14, [&](int64_t b, int64_t e) {
    auto k = static_cast<size_t>(
        std::partition_point(slots.begin(), slots.end(),
                             [b](const ArenaSlot& sl) { return sl.offset + sl.numel <= b; }) -
        slots.begin());
    for (; k < slots.size() && slots[k].offset < e; ++k) {
      if (!has[k]) continue;
      const int64_t lo = std::max(b, slots[k].offset);
      const int64_t hi = std::min(e, slots[k].offset + slots[k].numel);
      if (lo < hi) adam_update(s, p + lo, g + lo, m + lo, v + lo, hi - lo);
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
