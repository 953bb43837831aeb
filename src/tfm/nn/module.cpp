#include "tfm/nn/module.h"

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

void Module::apply(const std::function<void(Module&)>& fn) {
  fn(*this);
  for (auto& [name, m] : children_) m->apply(fn);
}

void Module::register_parameter(const std::string& name, Tensor* p) {
  p->set_requires_grad(true);
  params_.emplace_back(name, p);
}

void Module::register_module(const std::string& name, Module* m) {
  children_.emplace_back(name, m);
}

}  // namespace tfm::nn
