// The autograd tape: for each op run in grad mode, which backward to call, on which tensors. The
// backward closures hold what their forward saved; the tape itself does no math beyond summing
// gradients that reach the same tensor twice.
//
// An op front end records itself like this:
//
//   Tensor y = cpu::relu_forward(x);
//   if (autograd::needs_grad({&x})) {
//     autograd::record("relu", {&x}, {&y}, [y](const autograd::Grads& gy, const autograd::Needs&) {
//       return autograd::Grads{cpu::relu_backward(gy[0], y)};
//     });
//   }
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <vector>

#include "tfm/core/autograd_meta.h"
#include "tfm/core/tensor.h"

namespace tfm::autograd {

using Grads = std::vector<Tensor>;
using Needs = std::vector<bool>;
// Gets one gradient per output (zeros for an output nothing depended on) and which inputs need a
// gradient; returns one gradient per input (undefined where not needed).
using BackwardFn = std::function<Grads(const Grads& grad_outputs, const Needs& needs)>;

struct Node {
  const char* op;
  std::vector<std::shared_ptr<AutogradMeta>> inputs;  // null: that input needs no gradient
  std::vector<std::shared_ptr<AutogradMeta>> outputs;
  BackwardFn backward;
};

// True when grad mode is on and some input requires a gradient.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
bool needs_grad(const std::vector<const Tensor*>& inputs);

// Records an op; marks the outputs as requiring grad (non-leaf).
void record(const char* op, std::initializer_list<const Tensor*> inputs,
            std::initializer_list<Tensor*> outputs, BackwardFn backward);
// For ops with a run-time number of inputs or outputs (concat, split).
void record(const char* op, const std::vector<const Tensor*>& inputs,
            const std::vector<Tensor*>& outputs, BackwardFn backward);

// Runs the tape backwards from a scalar loss (gradient 1) or from `root` with gradient
// `root_grad`, accumulating into every tensor that requires grad; then clears the tape.
// Leaf gradients (parameters) add up across calls until zero_grad().
void backward(const Tensor& root, const Tensor& root_grad = Tensor());

// What a caller may watch during a backward pass (data-parallel training overlaps its gradient
// sums with the rest of the pass this way).
struct BackwardHooks {
  // A tensor with a gradient-arena slot (a parameter) whose gradient is final for this pass: no
  // node still to run takes it as an input. Called once per such tensor the tape reaches, right
  // after the last node that contributes to it; the order follows the tape, so it is the same
  // for every run of the same graph.
  std::function<void(AutogradMeta&)> slot_final;
  // After every node (cheap polling, e.g. to progress communication).
  std::function<void()> after_node;
};
void backward(const Tensor& root, const Tensor& root_grad, const BackwardHooks& hooks);

// Adds g into the gradient of a tensor; exposed for optimisers and tests. A tensor with a slot in
// a gradient arena (AutogradMeta::grad_slot) gets g copied or added there.
void accumulate(AutogradMeta& meta, const Tensor& g);

// For a backward closure: the tensor to write the gradient of its input `input` into. When that
// input is a parameter whose slot in a gradient arena is still empty this step, it is the slot
// itself, so the kernel writes the gradient straight into the arena and the tape has nothing to
// copy; otherwise (a second contribution, no arena, outside a backward) a new tensor. Contents
// uninitialised either way; the closure must fill it whole and return it as that input's
// gradient (a slot that is not returned is zeroed again).
Tensor grad_output(size_t input, const Shape& shape, DType dtype, Device device = Device::cpu);

// Drops everything recorded (e.g. after a forward pass whose loss is not used).
void clear_tape();
size_t tape_size();

}  // namespace tfm::autograd
