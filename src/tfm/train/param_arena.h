// One parameter arena and one gradient arena for training, as llm.c's malloc_and_point_parameters:
// every parameter becomes a view into one block of f32 and its gradient a view into a second block
// of the same layout, so the optimiser, the gradient norm and zero_grad are single passes over
// flat memory, and the gradients of the whole model are one buffer (what a data-parallel
// all-reduce sends, in buckets of consecutive slots).
//
// Layout. The parameters in the order given (a model's named_parameters(): registration order,
// the same in every run and process), each at an offset rounded up to kAlignment elements (64
// bytes, the caching allocator's alignment, so every kernel sees its operands aligned as before).
// The gaps are zero in both arenas and stay zero.
//
// Moving in. The arena takes each parameter's storage over: the values are copied to the
// parameter's place and the storage is re-pointed there (keeping the arena alive), so every
// handle on the parameter — the module's member, copies in lists, the optimiser's — reads and
// writes the arena from then on. The gradient's place goes into the parameter's AutogradMeta
// (`grad_slot`): backward accumulates there, and the ops that produce parameter gradients
// (linear, layer norms, embedding) write the first contribution of a step straight into it
// (autograd::grad_output), so there are no per-parameter gradient tensors to copy. A parameter's
// grad() is then a view of the arena: the next zero_grad clears it (clone it to keep it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tfm/core/autograd_meta.h"
#include "tfm/core/tensor.h"

namespace tfm {

// Where one parameter lives in the arenas: elements [offset, offset + numel) of each.
struct ArenaSlot {
  std::string name;
  Shape shape;
  int64_t offset = 0;
  int64_t numel = 0;
};

class ParameterArena {
 public:
  static constexpr int64_t kAlignment = 16;  // elements: 64 bytes

  // Moves `params` into the arenas, in this order. Each must be an f32 CPU tensor that requires
  // grad, is contiguous and is the whole of its storage, with a name and a storage of its own.
  // A gradient it already has is moved into its slot.
  explicit ParameterArena(const std::vector<std::pair<std::string, Tensor>>& params);
  ParameterArena(const ParameterArena&) = delete;
  ParameterArena& operator=(const ParameterArena&) = delete;

  // Elements of each arena, gaps included.
  int64_t size() const { return size_; }
  // One slot per parameter, in the order given (offsets increasing).
  const std::vector<ArenaSlot>& slots() const { return slots_; }
  // The slot of the parameter called `name` (throws if there is none).
  const ArenaSlot& slot(const std::string& name) const;

  // The arenas as flat f32 tensors of size() elements (views of the same memory).
  const Tensor& params() const { return params_flat_; }
  const Tensor& grads() const { return grads_flat_; }
  // In grads(), the gradient of slot k is [slots()[k].offset, + numel), zero where the parameter
  // had no gradient since the last zero_grad.

  // The slot of the parameter whose autograd state is m, or -1 when it is not in this arena.
  int64_t slot_of(const AutogradMeta& m) const;
  // Parameter k received a gradient since the last zero_grad.
  bool has_grad(size_t k) const { return metas_[k]->grad.defined(); }
  // Every gradient to none: one zero-fill of the gradient arena.
  void zero_grad();
  // Copies a gradient set on a parameter's AutogradMeta from outside the tape (a tensor assigned
  // to `grad`) into its slot, so that the flat buffer holds every gradient.
  void adopt_gradients();
  // Every parameter's gradient defined as its slot (zeros where it had none): after the slots
  // were filled from outside the tape, e.g. summed over data-parallel ranks, another rank's
  // batches may have reached a parameter this rank's did not.
  void define_gradients();
  // Throws unless every parameter still lives here: a later arena over the same parameters takes
  // them over, and an optimiser still holding this one would update memory no one reads.
  void check_resident() const;

  // A zero-filled f32 tensor of the arenas' layout (an optimiser's moments), and the view of
  // slot k in such a tensor (of any dtype: bf16 weight copies too).
  Tensor zeros_like() const { return Tensor::zeros({size_}, DType::f32, device_); }
  Device device() const { return device_; }  // where the parameters live
  Tensor view(const Tensor& flat, size_t k) const;

 private:
  Device device_ = Device::cpu;
  std::vector<ArenaSlot> slots_;
  std::vector<Tensor> tensors_;  // the parameters (handles sharing their storage)
  std::vector<std::shared_ptr<AutogradMeta>> metas_;
  std::unordered_map<const AutogradMeta*, int64_t> slot_of_meta_;
  int64_t size_ = 0;
  Tensor params_flat_, grads_flat_;
};

}  // namespace tfm
