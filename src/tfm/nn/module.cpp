#include "tfm/nn/module.h"

#include <algorithm>

#include "tfm/core/device_copy.h"
#include "tfm/nn/linear.h"

namespace tfm::nn {

NamedTensors Module::named_parameters(const std::string& prefix) const {
  NamedTensors out;
  collect(prefix, out);
  return out;
}

void Module::collect(const std::string& prefix, NamedTensors& out) const {
  const std::string dot = prefix.empty() ? "" : prefix + ".";
  for (const auto& [name, p] : params_) out.emplace_back(dot + name, p);
  for (const auto& [name, m] : children_) m->collect(dot + name, out);
}

void Module::set_training(bool on) {
  training_ = on;
  for (auto& [name, m] : children_) m->set_training(on);
}

void Module::to(Device device) {
  for (const auto& [name, p] : named_parameters()) {
    if (!p->defined() || p->device() == device) continue;
    Tensor moved = to_device(p->detach(), device);
    moved.set_requires_grad(p->requires_grad());
    *p = moved;
  }
}

void Module::apply(const std::function<void(Module&)>& fn) {
  fn(*this);
  for (auto& [name, m] : children_) m->apply(fn);
}

std::vector<Linear*> Module::linears() const {
  std::vector<Linear*> out;
  for (const auto& [name, m] : children_) {
    const auto own = std::find(own_linears_.begin(), own_linears_.end(), m);
    if (own != own_linears_.end()) {
      out.push_back(*own);
    } else {
      auto below = m->linears();
      out.insert(out.end(), below.begin(), below.end());
    }
  }
  return out;
}

void Module::register_parameter(const std::string& name, Tensor* p) {
  if (p->defined()) p->set_requires_grad(true);  // one left unallocated: where it is filled
  params_.emplace_back(name, p);
}

void Module::register_module(const std::string& name, Module* m) {
  children_.emplace_back(name, m);
}

void Module::register_module(const std::string& name, Linear* m) {
  children_.emplace_back(name, m);
  own_linears_.push_back(m);
}

}  // namespace tfm::nn
