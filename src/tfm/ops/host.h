// The one door through which code above ops/ reads tensor memory: a small result the host must
// see (top-k ids and scores, picked log-probs, attention rows) comes back through to_host, as
// CTranslate2's ops do. Everything else above ops/ touches tensors only through ops, so the same
// model, decode and train code runs on any device (tests/structure: `host_memory`).
#pragma once

#include <cstddef>
#include <span>

#include "tfm/core/device_copy.h"
#include "tfm/core/tensor.h"

namespace tfm {

// Read-only host elements of a tensor, in row-major order. A contiguous CPU tensor is viewed in
// place (no copy: the view keeps it alive); a strided one is packed, a device one copied, once.
template <typename T>
class HostView {
 public:
  HostView() = default;
  explicit HostView(const Tensor& t) {
    if (!t.defined()) return;
    held_ = to_device(t, Device::cpu).contiguous();
    elems_ = std::span<const T>(held_.data<T>(), static_cast<size_t>(held_.numel()));
  }
  const T* data() const { return elems_.data(); }
  size_t size() const { return elems_.size(); }
  bool empty() const { return elems_.empty(); }
  const T& operator[](size_t i) const { return elems_[i]; }
  std::span<const T> span() const { return elems_; }
  auto begin() const { return elems_.begin(); }
  auto end() const { return elems_.end(); }

 private:
  Tensor held_;
  std::span<const T> elems_;
};

// The copy-to-host op: t's elements on the host (undefined t: an empty view).
template <typename T>
HostView<T> to_host(const Tensor& t) {
  return HostView<T>(t);
}

}  // namespace tfm
