#include "tfm/train/optimizer.h"

#include <cmath>
#include <map>

#include "tfm/core/parallel.h"

namespace tfm {

Adam::Adam(std::vector<std::pair<std::string, Tensor>> params, AdamOptions options)
    : params_(std::move(params)), opt_(options) {
  TFM_CHECK(opt_.beta1 >= 0 && opt_.beta1 < 1 && opt_.beta2 >= 0 && opt_.beta2 < 1)
      << "adam: betas must be in [0, 1), got " << opt_.beta1 << ", " << opt_.beta2;
  TFM_CHECK(opt_.eps >= 0 && opt_.weight_decay >= 0) << "adam: eps and weight decay must be >= 0";
  for (const auto& [name, p] : params_) {
    TFM_CHECK(p.dtype() == DType::f32 && p.is_contiguous())
        << "adam: parameter " << name << " must be contiguous f32, got " << p.describe();
    m_.push_back(Tensor::zeros(p.shape()));
    v_.push_back(Tensor::zeros(p.shape()));
  }
}

void Adam::step(double lr, double grad_scale) {
  ++step_;
  const double bc1 = 1.0 - std::pow(opt_.beta1, static_cast<double>(step_));
  const double bc2 = 1.0 - std::pow(opt_.beta2, static_cast<double>(step_));
  const float step_size = static_cast<float>(lr / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float b1 = static_cast<float>(opt_.beta1), b2 = static_cast<float>(opt_.beta2);
  const float eps = static_cast<float>(opt_.eps), wd = static_cast<float>(opt_.weight_decay);
  const float gs = static_cast<float>(grad_scale);
  const float decay = opt_.decoupled ? static_cast<float>(1.0 - lr * opt_.weight_decay) : 1.0f;
  for (size_t k = 0; k < params_.size(); ++k) {
    Tensor g_t = params_[k].second.grad();
    if (!g_t.defined()) continue;
    Tensor gc = g_t.contiguous();
    float* p = params_[k].second.data<float>();
    const float* g = gc.data<float>();
    float* m = m_[k].data<float>();
    float* v = v_[k].data<float>();
    const bool coupled_wd = !opt_.decoupled && wd != 0.0f;
    parallel_for(gc.numel(), 1 << 14, [&](int64_t b, int64_t e) {
#pragma omp simd
      for (int64_t i = b; i < e; ++i) {
        const float gg = g[i] * gs;
        const float gi = coupled_wd ? gg + wd * p[i] : gg;
        m[i] = b1 * m[i] + (1.0f - b1) * gi;
        v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
        const float denom = std::sqrt(v[i]) * inv_sqrt_bc2 + eps;
        p[i] = p[i] * decay - step_size * m[i] / denom;
      }
    });
  }
}

void Adam::zero_grad() {
  for (auto& [name, p] : params_) p.zero_grad();
}

std::vector<std::pair<std::string, Tensor>> Adam::state() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t k = 0; k < params_.size(); ++k) {
    out.emplace_back("m." + params_[k].first, m_[k]);
    out.emplace_back("v." + params_[k].first, v_[k]);
  }
  return out;
}

void Adam::load_state(const std::vector<std::pair<std::string, Tensor>>& state, int64_t steps) {
  std::map<std::string, Tensor> by_name(state.begin(), state.end());
  for (size_t k = 0; k < params_.size(); ++k) {
    for (auto [prefix, dst] : {std::pair{"m.", &m_[k]}, {"v.", &v_[k]}}) {
      auto it = by_name.find(prefix + params_[k].first);
      TFM_CHECK(it != by_name.end()) << "optimizer state lacks " << prefix << params_[k].first;
      TFM_CHECK(it->second.shape() == dst->shape() && it->second.dtype() == DType::f32)
          << "optimizer state " << it->first << " is " << it->second.describe() << ", expected f32 "
          << shape_str(dst->shape());
      dst->copy_(it->second);
    }
  }
  TFM_CHECK(steps >= 0) << "optimizer state: negative step count";
  step_ = steps;
}

}  // namespace tfm
