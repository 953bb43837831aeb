// Tensor: a shaped, typed, strided view of shared storage. Copying a Tensor copies the handle;
// data and autograd state are shared. Methods here (reshape, slice, transpose, ...) are raw views
// with no autograd; model code uses the autograd-aware ops in tfm/ops/ instead.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "tfm/core/check.h"
#include "tfm/core/dtype.h"

namespace tfm {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& s);
int64_t shape_numel(const Shape& s);

struct AutogradMeta;

// Memory shared by tensors. `data` owns the block (its deleter returns it to an allocator or
// unmaps a file).
struct Storage {
  std::shared_ptr<void> data;
  size_t nbytes = 0;
  Device device = Device::cpu;
};

class Tensor {
 public:
  Tensor() = default;

  // Factories. `empty` leaves the contents uninitialised.
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32,
                     Device device = Device::cpu);
  static Tensor ones(const Shape& shape, DType dtype = DType::f32) {
    return full(shape, 1.0, dtype);
  }
  template <typename T>
  static Tensor from_vector(const Shape& shape, const std::vector<T>& values);
  // Wraps memory someone else owns (a memory-mapped file, say); the storage keeps it alive.
  static Tensor from_storage(std::shared_ptr<Storage> storage, const Shape& shape, DType dtype,
                             int64_t offset_elements = 0);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  // Size of axis d; negative d counts from the end.
  int64_t size(int64_t d) const;
  int64_t numel() const { return shape_numel(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device : Device::cpu; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  int64_t offset() const { return offset_; }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  std::string describe() const;  // e.g. "f32 (2, 3)"

  // Typed pointer to the first element; checks the dtype.
  template <typename T>
  T* data() const {
    TFM_CHECK(defined()) << "data<" << dtype_name(DTypeOf<T>::value) << ">() on undefined tensor";
    TFM_CHECK(DTypeOf<T>::value == dtype_)
        << "tensor is " << dtype_name(dtype_) << ", asked for " << dtype_name(DTypeOf<T>::value);
    return static_cast<T*>(raw_data());
  }
  void* raw_data() const;

  // Element access for tests and small host-side work (contiguous or not); value as double.
  double item() const;
  double at(std::initializer_list<int64_t> index) const;
  template <typename T>
  std::vector<T> to_vector() const;

  // Views, no copy. `reshape` needs a contiguous tensor (call contiguous() first otherwise);
  // one dimension may be -1.
  Tensor reshape(const Shape& shape) const;
  Tensor slice(int64_t begin, int64_t end) const;  // rows [begin, end) of axis 0
  Tensor select(int64_t index) const;              // row `index` of axis 0, axis dropped
  Tensor transpose(int64_t d0, int64_t d1) const;  // strided view
  Tensor detach() const;                           // same data, no autograd

  // Copies.
  Tensor contiguous() const;  // itself when already contiguous
  Tensor clone() const;
  // Value conversion between f32/f64/i32/i64/u8/i8; bf16 and f16 widen (exactly) to f32 or f64.
  Tensor to(DType dtype) const;
  void copy_(const Tensor& src);  // same shape; any strides
  void fill_(double value);
  // this += src per element (f32 or f64, same shape and dtype; this contiguous, src any strides):
  // gradient accumulation, which autograd does below the ops layer. CPU only.
  void add_(const Tensor& src);

  // Autograd state. A tensor that requires grad owns an AutogradMeta shared by its copies.
  bool requires_grad() const;
  Tensor& set_requires_grad(bool on);
  Tensor grad() const;  // undefined until a backward pass reaches this tensor
  void zero_grad();     // drops the gradient (set to none; a gradient arena's slot is zeroed)
  const std::shared_ptr<AutogradMeta>& autograd_meta() const { return meta_; }
  void set_autograd_meta(std::shared_ptr<AutogradMeta> meta) { meta_ = std::move(meta); }

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Shape strides_;       // in elements
  int64_t offset_ = 0;  // in elements
  DType dtype_ = DType::f32;
  std::shared_ptr<AutogradMeta> meta_;
};

Shape contiguous_strides(const Shape& shape);

// a and b are the same view: storage, offset, shape, strides and dtype.
bool same_view(const Tensor& a, const Tensor& b);

// Moves t's values into `place` (contiguous, of t's shape and dtype, on t's device) and re-points
// t's storage there: every handle sharing t's storage reads and writes place's memory from then
// on, and the storage keeps place's alive. t must be contiguous and the whole of its storage.
// How a parameter arena takes its parameters over (train/param_arena.h).
void move_storage_into(const Tensor& t, const Tensor& place);
// t's storage begins at place's first element (t still lives where move_storage_into put it).
bool storage_begins_at(const Tensor& t, const Tensor& place);

// Visits every element offset (in elements, from the storage start) of t in row-major order.
template <typename F>
void for_each_offset(const Tensor& t, F&& f) {
  const int64_t n = t.numel();
  if (n == 0) return;
  if (t.is_contiguous()) {
    for (int64_t i = 0; i < n; ++i) f(t.offset() + i);
    return;
  }
  const int64_t d = t.dim();
  std::vector<int64_t> idx(d, 0);
  int64_t off = t.offset();
  for (int64_t i = 0; i < n; ++i) {
    f(off);
    for (int64_t k = d - 1; k >= 0; --k) {
      if (++idx[k] < t.shape()[k]) {
        off += t.strides()[k];
        break;
      }
      off -= t.strides()[k] * (t.shape()[k] - 1);
      idx[k] = 0;
    }
  }
}

}  // namespace tfm
