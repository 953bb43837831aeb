#include "tfm/autograd/tape.h"

#include <algorithm>
#include <unordered_set>

#include "tfm/autograd/grad_mode.h"

namespace tfm {

namespace {
thread_local bool g_grad_enabled = true;
thread_local std::vector<autograd::Node> g_tape;
// The node whose backward is running (grad_output looks at its inputs) and the arena slots
// grad_output has lent it so far: a slot is lent at most once per node, so two inputs that are
// the same parameter never write into one slot.
thread_local const autograd::Node* g_running = nullptr;
thread_local std::vector<AutogradMeta*> g_lent;

// Marks a node as running for grad_output; afterwards restores the arena invariant (a slot holds
// zeros while its gradient is undefined) for any slot lent but not returned.
class RunningNode {
 public:
  explicit RunningNode(const autograd::Node& node) { g_running = &node; }
  ~RunningNode() {
    for (AutogradMeta* m : g_lent) {
      if (!m->grad.defined()) m->grad_slot.fill_(0.0);
    }
    g_lent.clear();
    g_running = nullptr;
  }
  RunningNode(const RunningNode&) = delete;
  RunningNode& operator=(const RunningNode&) = delete;
};

}  // namespace

bool GradMode::enabled() {
  return g_grad_enabled;
}
void GradMode::set_enabled(bool on) {
  g_grad_enabled = on;
}

namespace autograd {

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  return needs_grad(std::vector<const Tensor*>(inputs));
}

bool needs_grad(const std::vector<const Tensor*>& inputs) {
  if (!GradMode::enabled()) return false;
  for (const Tensor* t : inputs)
    if (t != nullptr && t->defined() && t->requires_grad()) return true;
  return false;
}

void record(const char* op, std::initializer_list<const Tensor*> inputs,
            std::initializer_list<Tensor*> outputs, BackwardFn backward) {
  record(op, std::vector<const Tensor*>(inputs), std::vector<Tensor*>(outputs),
         std::move(backward));
}

void record(const char* op, const std::vector<const Tensor*>& inputs,
            const std::vector<Tensor*>& outputs, BackwardFn backward) {
  Node node;
  node.op = op;
  for (const Tensor* t : inputs)
    node.inputs.push_back(t != nullptr && t->defined() ? t->autograd_meta() : nullptr);
  for (Tensor* t : outputs) {
    auto meta = std::make_shared<AutogradMeta>();
    meta->is_leaf = false;
    meta->shape = t->shape();
    meta->dtype = t->dtype();
    meta->device = t->device();
    t->set_autograd_meta(meta);
    node.outputs.push_back(std::move(meta));
  }
  node.backward = std::move(backward);
  g_tape.push_back(std::move(node));
}

void accumulate(AutogradMeta& meta, const Tensor& g) {
  TFM_CHECK(g.shape() == meta.shape)
      << "gradient " << g.describe() << " for a tensor of shape " << shape_str(meta.shape);
  if (meta.grad_slot.defined()) {
    // The first contribution of a step fills the slot (unless the kernel wrote it there
    // already), later ones add into it: the same values as the copy-on-first-accumulate below.
    if (!meta.grad.defined()) {
      if (!same_view(g, meta.grad_slot)) meta.grad_slot.copy_(g);
      meta.grad = meta.grad_slot;
      meta.grad_owned = true;
    } else {
      meta.grad.add_(g);
    }
    return;
  }
  if (!meta.grad.defined()) {
    meta.grad = g;
    meta.grad_owned = false;
    return;
  }
  if (!meta.grad_owned) {
    meta.grad = meta.grad.clone();
    meta.grad_owned = true;
  }
  meta.grad.add_(g);
}

void backward(const Tensor& root, const Tensor& root_grad) {
  backward(root, root_grad, BackwardHooks{});
}

void backward(const Tensor& root, const Tensor& root_grad, const BackwardHooks& hooks) {
  TFM_CHECK(root.defined() && root.requires_grad())
      << "backward: the root tensor does not require grad (was it computed in no-grad mode?)";
  Tensor seed = root_grad;
  if (!seed.defined()) {
    TFM_CHECK(root.numel() == 1) << "backward without a gradient needs a scalar, got "
                                 << root.describe();
    seed = Tensor::full(root.shape(), 1.0, root.dtype(), root.device());
  }
  NoGradGuard no_grad;
  accumulate(*root.autograd_meta(), seed);
  std::vector<Node> tape;
  tape.swap(g_tape);
  // final_after[i]: the slot-holding inputs whose earliest use is node i, final once it has run.
  std::vector<std::vector<AutogradMeta*>> final_after;
  if (hooks.slot_final) {
    final_after.resize(tape.size());
    std::unordered_set<const AutogradMeta*> seen;
    for (size_t i = 0; i < tape.size(); ++i)
      for (const auto& m : tape[i].inputs)
        if (m != nullptr && m->grad_slot.defined() && seen.insert(m.get()).second)
          final_after[i].push_back(m.get());
  }
  for (auto it = tape.rbegin(); it != tape.rend(); ++it) {
    Node& node = *it;
    bool any = false;
    for (auto& m : node.outputs) any = any || m->grad.defined();
    if (any) {
      Grads gouts;
      for (auto& m : node.outputs)
        gouts.push_back(m->grad.defined() ? m->grad : Tensor::zeros(m->shape, m->dtype, m->device));
      Needs needs;
      for (auto& m : node.inputs) needs.push_back(m != nullptr);
      RunningNode running(node);
      Grads gins = node.backward(gouts, needs);
      TFM_CHECK(gins.size() == node.inputs.size())
          << "backward of " << node.op << " returned " << gins.size() << " gradients for "
          << node.inputs.size() << " inputs";
      // Gradients written into their arena slot are claimed first: another input's
      // contribution to the same parameter must add to them, not overwrite them.
      auto in_slot = [&](size_t i) {
        return node.inputs[i]->grad_slot.defined() && same_view(gins[i], node.inputs[i]->grad_slot);
      };
      for (int pass = 0; pass < 2; ++pass) {
        for (size_t i = 0; i < gins.size(); ++i)
          if (node.inputs[i] && gins[i].defined() && in_slot(i) == (pass == 0))
            accumulate(*node.inputs[i], gins[i]);
      }
    }
    // Intermediate gradients are dead once their producer has run: free them now.
    for (auto& m : node.outputs) m->grad = Tensor();
    node.backward = nullptr;
    if (hooks.slot_final) {
      for (AutogradMeta* m : final_after[static_cast<size_t>(tape.rend() - it) - 1])
        hooks.slot_final(*m);
    }
    if (hooks.after_node) hooks.after_node();
  }
}

Tensor grad_output(size_t input, const Shape& shape, DType dtype, Device device) {
  if (g_running != nullptr && input < g_running->inputs.size()) {
    AutogradMeta* m = g_running->inputs[input].get();
    if (m != nullptr && m->grad_slot.defined() && !m->grad.defined() &&
        m->grad_slot.shape() == shape && m->grad_slot.dtype() == dtype &&
        m->grad_slot.device() == device &&
        std::find(g_lent.begin(), g_lent.end(), m) == g_lent.end()) {
      g_lent.push_back(m);
      return m->grad_slot;
    }
  }
  return Tensor::empty(shape, dtype, device);
}

void clear_tape() {
  g_tape.clear();
}
size_t tape_size() {
  return g_tape.size();
}

}  // namespace autograd
}  // namespace tfm
