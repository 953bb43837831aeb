// Module: a named tree of parameters, as PyTorch's nn.Module, without the magic. A module owns
// its parameter tensors as members and registers pointers to them, so modules are neither
// copyable nor movable (hold them by value in their parent or by unique_ptr in a vector).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tfm/core/tensor.h"

namespace tfm::nn {

class Linear;

using NamedTensors = std::vector<std::pair<std::string, Tensor*>>;

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  // Every parameter below this module, in registration order, named "prefix.child.name".
  NamedTensors named_parameters(const std::string& prefix = "") const;
  void set_training(bool on);
  // Moves every parameter to `device` (a copy there, still requiring grad; gradients dropped).
  // Tensors a module holds besides its parameters are its own to move (Transformer::to).
  void to(Device device);
  // Calls fn on this module and every module below it, parents first.
  void apply(const std::function<void(Module&)>& fn);
  // Every Linear below this module, in registration order (what a model binds for inference and
  // sets a training compute type on; registered as such, so no walk needs to test types).
  std::vector<Linear*> linears() const;
  bool training() const { return training_; }

 protected:
  // Registers a parameter member; it is marked as requiring grad (an undefined one, left
  // unallocated for a load that binds it from a file, is not).
  void register_parameter(const std::string& name, Tensor* p);
  void register_module(const std::string& name, Module* m);
  void register_module(const std::string& name, Linear* m);

 private:
  void collect(const std::string& prefix, NamedTensors& out) const;

  std::vector<std::pair<std::string, Tensor*>> params_;
  std::vector<std::pair<std::string, Module*>> children_;
  std::vector<Linear*> own_linears_;  // the children that are Linear
  bool training_ = false;
};

}  // namespace tfm::nn
