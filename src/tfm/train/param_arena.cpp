#include "tfm/train/param_arena.h"

#include <set>
#include <string>

#include "tfm/autograd/tape.h"

namespace tfm {

ParameterArena::ParameterArena(const std::vector<std::pair<std::string, Tensor>>& params) {
  std::set<std::string> names;
  std::set<const Storage*> storages;
  for (const auto& [name, p] : params) {
    TFM_CHECK(names.insert(name).second) << "parameter arena: parameter " << name << " twice";
    TFM_CHECK(p.defined() && p.dtype() == DType::f32 && p.is_contiguous())
        << "parameter arena: parameter " << name << " must be a contiguous f32 tensor, got "
        << (p.defined() ? p.describe() : std::string("an undefined tensor"));
    if (slots_.empty()) device_ = p.device();
    TFM_CHECK(p.device() == device_)
        << "parameter arena: parameter " << name << " is on " << device_name(p.device())
        << ", the ones before it on " << device_name(device_);
    TFM_CHECK(p.offset() == 0 && p.storage()->nbytes == p.nbytes())
        << "parameter arena: parameter " << name << " " << p.describe()
        << " is a view into a larger block; it cannot be moved on its own";
    TFM_CHECK(storages.insert(p.storage().get()).second)
        << "parameter arena: parameter " << name << " shares its storage with another parameter";
    TFM_CHECK(p.requires_grad()) << "parameter arena: parameter " << name
                                 << " does not require grad";
    ArenaSlot s;
    s.name = name;
    s.shape = p.shape();
    s.offset = size_;
    s.numel = p.numel();
    size_ = (s.offset + s.numel + kAlignment - 1) / kAlignment * kAlignment;
    slots_.push_back(std::move(s));
    tensors_.push_back(p);
    metas_.push_back(p.autograd_meta());
    slot_of_meta_[metas_.back().get()] = static_cast<int64_t>(metas_.size()) - 1;
  }
  // Values copied in below; the gaps zeroed so that flat passes read only finite numbers.
  params_flat_ = Tensor::zeros({size_}, DType::f32, device_);
  grads_flat_ = Tensor::zeros({size_}, DType::f32, device_);
  for (size_t k = 0; k < slots_.size(); ++k) {
    move_storage_into(tensors_[k], view(params_flat_, k));
    AutogradMeta& meta = *metas_[k];
    Tensor old_grad = meta.grad;
    meta.grad_slot = view(grads_flat_, k);
    meta.grad = Tensor();
    meta.grad_owned = false;
    if (old_grad.defined()) autograd::accumulate(meta, old_grad);  // copied into the slot
  }
}

int64_t ParameterArena::slot_of(const AutogradMeta& m) const {
  const auto it = slot_of_meta_.find(&m);
  return it == slot_of_meta_.end() ? -1 : it->second;
}

const ArenaSlot& ParameterArena::slot(const std::string& name) const {
  for (const ArenaSlot& s : slots_)
    if (s.name == name) return s;
  TFM_FAIL() << "parameter arena: no parameter " << name;
  return slots_.front();
}

Tensor ParameterArena::view(const Tensor& flat, size_t k) const {
  TFM_CHECK(flat.numel() == size_ && flat.is_contiguous())
      << "parameter arena: " << flat.describe() << " does not have the arena's layout (" << size_
      << " elements)";
  return Tensor::from_storage(flat.storage(), slots_[k].shape, flat.dtype(),
                              flat.offset() + slots_[k].offset);
}

void ParameterArena::zero_grad() {
  grads_flat_.fill_(0.0);
  for (const auto& m : metas_) {
    m->grad = Tensor();
    m->grad_owned = false;
  }
}

void ParameterArena::adopt_gradients() {
  for (size_t k = 0; k < metas_.size(); ++k) {
    AutogradMeta& m = *metas_[k];
    if (!m.grad.defined() || same_view(m.grad, m.grad_slot)) continue;
    Tensor g = m.grad;
    m.grad = Tensor();
    autograd::accumulate(m, g);  // copied into the slot
  }
}

void ParameterArena::define_gradients() {
  for (const auto& m : metas_) {
    if (m->grad.defined()) continue;
    m->grad = m->grad_slot;  // zero since the last zero_grad, unless filled from outside
    m->grad_owned = true;
  }
}

void ParameterArena::check_resident() const {
  for (size_t k = 0; k < slots_.size(); ++k) {
    const bool here = storage_begins_at(tensors_[k], view(params_flat_, k)) &&
                      metas_[k] == tensors_[k].autograd_meta() &&
                      metas_[k]->grad_slot.storage() == grads_flat_.storage();
    TFM_CHECK(here) << "parameter arena: parameter " << slots_[k].name
                    << " has moved out of this arena (a newer optimiser over the same parameters "
                       "took them over, or requires_grad was reset)";
  }
}

}  // namespace tfm
