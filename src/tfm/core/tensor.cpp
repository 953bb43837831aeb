#include "tfm/core/tensor.h"

#include <cstring>
#include <sstream>

#include "tfm/core/allocator.h"
#include "tfm/core/autograd_meta.h"
#include "tfm/core/parallel.h"
#ifdef TFM_WITH_CUDA
#include "tfm/core/cuda/accumulate.h"
#include "tfm/core/cuda/memory.h"
#include "tfm/core/cuda/strided_copy.h"
#endif

namespace tfm {

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ")";
  return os.str();
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  int64_t s = 1;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    st[i] = s;
    s *= shape[i];
  }
  return st;
}

namespace {

// Host code must never dereference device memory: say what to do instead of crashing.
void check_host(const Tensor& t, const char* what) {
  TFM_CHECK(t.device() == Device::cpu)
      << what << ": tensor " << t.describe() << " is on " << device_name(t.device())
      << "; copy it to the cpu first (to_device)";
}

// Copies nbytes between two contiguous blocks, at least one of them on a device.
void copy_across_devices(void* dst, Device dst_dev, const void* src, Device src_dev,
                         size_t nbytes) {
#ifdef TFM_WITH_CUDA
  if (dst_dev == Device::cuda && src_dev == Device::cuda) {
    cuda::copy_device_to_device(dst, src, nbytes);
  } else if (dst_dev == Device::cuda) {
    cuda::copy_host_to_device(dst, src, nbytes);
  } else {
    cuda::copy_device_to_host(dst, src, nbytes);
  }
#else
  TFM_FAIL() << "copy between " << device_name(src_dev) << " and " << device_name(dst_dev)
             << ": this build has no CUDA backend";
#endif
}

void check_shape(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    TFM_CHECK(d >= 0) << "negative dimension in shape " << shape_str(shape);
    TFM_CHECK(d == 0 || n <= (int64_t{1} << 50) / d)
        << "shape " << shape_str(shape) << " is too large";
    n *= d;
  }
}

template <typename F>
void dispatch_value(DType dt, F&& f) {
  switch (dt) {
    case DType::f32:
      f(float{});
      return;
    case DType::f64:
      f(double{});
      return;
    case DType::i32:
      f(int32_t{});
      return;
    case DType::i64:
      f(int64_t{});
      return;
    case DType::u8:
      f(uint8_t{});
      return;
    case DType::i8:
      f(int8_t{});
      return;
    default:
      TFM_FAIL() << "element access is not supported for dtype " << dtype_name(dt);
  }
}

}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  check_shape(shape);
  Tensor t;
  t.storage_ = std::make_shared<Storage>();
  t.storage_->nbytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  t.storage_->device = device;
  t.storage_->data = allocator_for(device).allocate(t.storage_->nbytes);
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (device == Device::cpu) {
    std::memset(t.raw_data(), 0, t.nbytes());
  } else {
    t.fill_(0.0);
  }
  return t;
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

template <typename T>
Tensor Tensor::from_vector(const Shape& shape, const std::vector<T>& values) {
  TFM_CHECK(shape_numel(shape) == static_cast<int64_t>(values.size()))
      << "from_vector: shape " << shape_str(shape) << " needs " << shape_numel(shape)
      << " values, got " << values.size();
  Tensor t = empty(shape, DTypeOf<T>::value);
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  return t;
}
template Tensor Tensor::from_vector<float>(const Shape&, const std::vector<float>&);
template Tensor Tensor::from_vector<double>(const Shape&, const std::vector<double>&);
template Tensor Tensor::from_vector<int32_t>(const Shape&, const std::vector<int32_t>&);
template Tensor Tensor::from_vector<int64_t>(const Shape&, const std::vector<int64_t>&);
template Tensor Tensor::from_vector<uint8_t>(const Shape&, const std::vector<uint8_t>&);

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, const Shape& shape, DType dtype,
                            int64_t offset_elements) {
  check_shape(shape);
  TFM_CHECK(storage != nullptr) << "from_storage: null storage";
  const size_t need =
      (static_cast<size_t>(offset_elements) + shape_numel(shape)) * dtype_size(dtype);
  TFM_CHECK(offset_elements >= 0 && need <= storage->nbytes)
      << "from_storage: " << dtype_name(dtype) << " " << shape_str(shape) << " at element "
      << offset_elements << " needs " << need << " bytes, storage has " << storage->nbytes;
  Tensor t;
  t.storage_ = std::move(storage);
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.offset_ = offset_elements;
  t.dtype_ = dtype;
  return t;
}

int64_t Tensor::size(int64_t d) const {
  const int64_t nd = dim();
  TFM_CHECK(d >= -nd && d < nd) << "axis " << d << " out of range for tensor " << describe();
  return shape_[d < 0 ? d + nd : d];
}

bool Tensor::is_contiguous() const {
  int64_t s = 1;
  for (int64_t i = dim() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != s) return false;
    s *= shape_[i];
  }
  return true;
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined";
  return std::string(dtype_name(dtype_)) + " " + shape_str(shape_);
}

void* Tensor::raw_data() const {
  TFM_CHECK(defined()) << "access to an undefined tensor";
  return static_cast<char*>(storage_->data.get()) + offset_ * dtype_size(dtype_);
}

double Tensor::item() const {
  TFM_CHECK(numel() == 1) << "item() needs one element, tensor is " << describe();
  return at({});
}

double Tensor::at(std::initializer_list<int64_t> index) const {
  TFM_CHECK(static_cast<int64_t>(index.size()) == dim() || (index.size() == 0 && numel() == 1))
      << "at(): " << index.size() << " indices for tensor " << describe();
  int64_t off = offset_;
  int64_t k = 0;
  for (int64_t i : index) {
    TFM_CHECK(i >= 0 && i < shape_[k])
        << "at(): index " << i << " out of range on axis " << k << " of " << describe();
    off += i * strides_[k++];
  }
  check_host(*this, "at()");
  double v = 0;
  dispatch_value(dtype_, [&](auto zero) {
    using T = decltype(zero);
    v = static_cast<double>(static_cast<const T*>(storage_->data.get())[off]);
  });
  return v;
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  if (device() != Device::cpu) {
    Tensor host = empty(shape_, dtype_);
    host.copy_(*this);
    return host.to_vector<T>();
  }
  Tensor c = contiguous();
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;

Tensor Tensor::reshape(const Shape& shape) const {
  TFM_CHECK(defined()) << "reshape of an undefined tensor";
  TFM_CHECK(is_contiguous()) << "reshape needs a contiguous tensor, got " << describe()
                             << " with strides " << shape_str(strides_)
                             << "; call contiguous() first";
  Shape s = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      TFM_CHECK(infer < 0) << "reshape: more than one -1 in " << shape_str(shape);
      infer = static_cast<int64_t>(i);
    } else {
      TFM_CHECK(s[i] >= 0) << "reshape: bad dimension in " << shape_str(shape);
      known *= s[i];
    }
  }
  if (infer >= 0) {
    TFM_CHECK(known > 0 && numel() % known == 0)
        << "reshape: cannot infer -1 in " << shape_str(shape) << " for " << describe();
    s[infer] = numel() / known;
  }
  TFM_CHECK(shape_numel(s) == numel())
      << "reshape: " << describe() << " cannot become " << shape_str(shape);
  Tensor t = *this;
  t.shape_ = s;
  t.strides_ = contiguous_strides(s);
  t.meta_.reset();
  return t;
}

Tensor Tensor::slice(int64_t begin, int64_t end) const {
  TFM_CHECK(dim() >= 1) << "slice of a 0-d tensor";
  TFM_CHECK(0 <= begin && begin <= end && end <= shape_[0])
      << "slice [" << begin << ", " << end << ") out of range for " << describe();
  Tensor t = *this;
  t.shape_[0] = end - begin;
  t.offset_ += begin * strides_[0];
  t.meta_.reset();
  return t;
}

Tensor Tensor::select(int64_t index) const {
  TFM_CHECK(dim() >= 1) << "select on a 0-d tensor";
  TFM_CHECK(0 <= index && index < shape_[0])
      << "select " << index << " out of range for " << describe();
  Tensor t = *this;
  t.offset_ += index * strides_[0];
  t.shape_.erase(t.shape_.begin());
  t.strides_.erase(t.strides_.begin());
  t.meta_.reset();
  return t;
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  const int64_t nd = dim();
  TFM_CHECK(d0 >= -nd && d0 < nd && d1 >= -nd && d1 < nd)
      << "transpose(" << d0 << ", " << d1 << ") out of range for " << describe();
  if (d0 < 0) d0 += nd;
  if (d1 < 0) d1 += nd;
  Tensor t = *this;
  std::swap(t.shape_[d0], t.shape_[d1]);
  std::swap(t.strides_[d0], t.strides_[d1]);
  t.meta_.reset();
  return t;
}

Tensor Tensor::detach() const {
  Tensor t = *this;
  t.meta_.reset();
  return t;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_, device());
  t.copy_(*this);
  return t;
}

void Tensor::copy_(const Tensor& src) {
  TFM_CHECK(src.shape_ == shape_) << "copy_: source " << src.describe() << " into " << describe();
  TFM_CHECK(src.dtype_ == dtype_) << "copy_: dtype " << dtype_name(src.dtype_) << " into "
                                  << dtype_name(dtype_) << "; use to()";
  if (device() != Device::cpu || src.device() != Device::cpu) {
    if (is_contiguous() && !src.is_contiguous()) {
#ifdef TFM_WITH_CUDA
      if (device() == Device::cuda && src.device() == Device::cuda) {
        // A device view packed on the device, one thread an element.
        cuda::gather_strided(static_cast<int>(src.dim()), src.shape_.data(), src.strides_.data(),
                             dtype_size(dtype_), src.raw_data(), raw_data());
        return;
      }
#endif
      copy_(src.contiguous());  // packed on its own device, then one cudaMemcpy
      return;
    }
    // Strided device destinations need a scatter kernel; contiguous ones are one cudaMemcpy.
    TFM_CHECK(is_contiguous() && src.is_contiguous())
        << "copy_: copies that involve a device need contiguous tensors, got " << src.describe()
        << " on " << device_name(src.device()) << " into " << describe() << " on "
        << device_name(device());
    copy_across_devices(raw_data(), device(), src.raw_data(), src.device(), nbytes());
    return;
  }
  if (src.storage_ == storage_ && !(src.is_contiguous() && is_contiguous())) {
    // Element-by-element copying between overlapping strided views would read values it has
    // already overwritten: go through a private copy.
    copy_(src.clone());
    return;
  }
  const size_t es = dtype_size(dtype_);
  if (is_contiguous() && src.is_contiguous()) {
    std::memmove(raw_data(), src.raw_data(), nbytes());
    return;
  }
  std::vector<int64_t> dst_offsets;
  dst_offsets.reserve(numel());
  for_each_offset(*this, [&](int64_t o) { dst_offsets.push_back(o); });
  char* dbase = static_cast<char*>(storage_->data.get());
  const char* sbase = static_cast<const char*>(src.storage_->data.get());
  size_t i = 0;
  for_each_offset(
      src, [&](int64_t o) { std::memcpy(dbase + dst_offsets[i++] * es, sbase + o * es, es); });
}

namespace {

// The f32 value of a bf16 bit pattern: its top 16 bits (exact, NaN and Inf included).
float bf16_bits_to_float(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The f32 value of an IEEE binary16 bit pattern (exact: subnormals, Inf and NaN included).
float f16_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    u = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    u = sign;
  } else {  // subnormal: mant · 2^-24, exactly representable in f32
    const float v = static_cast<float>(mant) * 0x1p-24f;
    std::memcpy(&u, &v, sizeof u);
    u |= sign;
  }
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return clone();
  check_host(*this, "to(dtype)");
  Tensor src = contiguous();
  const int64_t n = numel();
  if (dtype_ == DType::bf16 || dtype_ == DType::f16) {  // widened exactly (checkpoints' f16/bf16)
    TFM_CHECK(dtype == DType::f32 || dtype == DType::f64)
        << "to(dtype): " << dtype_name(dtype_) << " converts to f32 or f64, not "
        << dtype_name(dtype);
    std::vector<float> v(static_cast<size_t>(n));
    const auto* h = static_cast<const uint16_t*>(src.raw_data());
    for (int64_t i = 0; i < n; ++i)
      v[i] = dtype_ == DType::bf16 ? bf16_bits_to_float(h[i]) : f16_bits_to_float(h[i]);
    Tensor f = from_vector<float>(shape_, v);
    return dtype == DType::f32 ? f : f.to(dtype);
  }
  Tensor out = empty(shape_, dtype, device());
  dispatch_value(dtype_, [&](auto sz) {
    using S = decltype(sz);
    dispatch_value(dtype, [&](auto dz) {
      using D = decltype(dz);
      const S* s = static_cast<const S*>(src.raw_data());
      D* d = static_cast<D*>(out.raw_data());
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(s[i]);
    });
  });
  return out;
}

void Tensor::fill_(double value) {
  TFM_CHECK(defined()) << "fill_ on an undefined tensor";
  if (device() != Device::cpu) {
    TFM_CHECK(is_contiguous()) << "fill_: on " << device_name(device())
                               << " only a contiguous tensor can be filled, got " << describe();
    if (value != 0.0) {
      // Rare and small (a scalar loss, a backward's seed): filled on the host, copied over once.
      copy_(full(shape_, value, dtype_, Device::cpu));
      return;
    }
#ifdef TFM_WITH_CUDA
    cuda::memset_zero(raw_data(), nbytes());
#endif
    return;
  }
  if (value == 0.0 && is_contiguous()) {  // all-bits-zero is 0 in every dtype
    std::memset(raw_data(), 0, nbytes());
    return;
  }
  char* base = static_cast<char*>(storage_->data.get());
  dispatch_value(dtype_, [&](auto z) {
    using T = decltype(z);
    const T v = static_cast<T>(value);
    for_each_offset(*this, [&](int64_t o) { reinterpret_cast<T*>(base)[o] = v; });
  });
}

namespace {

// Per element, so the result does not depend on the thread count; the same float addition the
// ops' add_ performs.
template <typename T>
void add_into(T* dst, const T* src, int64_t n) {
  parallel_for(n, int64_t{1} << 14, [&](int64_t b, int64_t e) {
#pragma omp simd
    for (int64_t i = b; i < e; ++i) dst[i] += src[i];
  });
}

}  // namespace

void Tensor::add_(const Tensor& g) {
  TFM_CHECK(device() == g.device()) << "add_: " << g.describe() << " on " << device_name(g.device())
                                    << " added to one on " << device_name(device());
  TFM_CHECK(dtype_ == g.dtype()) << "add_: " << g.describe() << " added to one of dtype "
                                 << dtype_name(dtype_);
  TFM_CHECK(shape_ == g.shape()) << "add_: " << g.describe() << " added to " << describe();
  TFM_CHECK(is_contiguous()) << "add_: destination " << describe() << " is not contiguous";
  const Tensor src = g.contiguous();
  if (device() != Device::cpu) {
    TFM_CHECK(dtype_ == DType::f32)
        << "add_: on " << device_name(device()) << " f32 only, got " << describe();
#ifdef TFM_WITH_CUDA
    cuda::add_into(data<float>(), src.data<float>(), numel());
#endif
    return;
  }
  if (dtype_ == DType::f32) {
    add_into(data<float>(), src.data<float>(), numel());
  } else {
    TFM_CHECK(dtype_ == DType::f64) << "add_: f32 or f64 only, got " << describe();
    add_into(data<double>(), src.data<double>(), numel());
  }
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage() && a.offset() == b.offset() && a.shape() == b.shape() &&
         a.strides() == b.strides() && a.dtype() == b.dtype();
}

void move_storage_into(const Tensor& t, const Tensor& place) {
  TFM_CHECK(t.defined() && place.defined() && t.shape() == place.shape() &&
            t.dtype() == place.dtype() && t.device() == place.device())
      << "move_storage_into: " << t.describe() << " into " << place.describe();
  TFM_CHECK(t.is_contiguous() && place.is_contiguous() && t.offset() == 0 &&
            t.storage()->nbytes == t.nbytes())
      << "move_storage_into: " << t.describe() << " must be contiguous and all of its storage";
  Tensor(place).copy_(t);
  // Aliasing constructor: the storage now points into place's block and keeps it alive; its old
  // block goes back to the allocator.
  t.storage()->data = std::shared_ptr<void>(place.storage()->data, place.raw_data());
}

bool storage_begins_at(const Tensor& t, const Tensor& place) {
  return t.defined() && place.defined() && t.storage()->data.get() == place.raw_data();
}

bool Tensor::requires_grad() const {
  return meta_ != nullptr;
}

Tensor& Tensor::set_requires_grad(bool on) {
  if (!on) {
    meta_.reset();
    return *this;
  }
  TFM_CHECK(is_floating(dtype_)) << "only floating tensors can require grad, got " << describe();
  if (!meta_) {
    meta_ = std::make_shared<AutogradMeta>();
    meta_->shape = shape_;
    meta_->dtype = dtype_;
    meta_->device = device();
  }
  return *this;
}

Tensor Tensor::grad() const {
  return meta_ ? meta_->grad : Tensor();
}

void Tensor::zero_grad() {
  if (meta_) {
    // A slot in a gradient arena holds zeros while there is no gradient (autograd_meta.h).
    if (meta_->grad.defined() && meta_->grad_slot.defined())
      std::memset(meta_->grad_slot.raw_data(), 0, meta_->grad_slot.nbytes());
    meta_->grad = Tensor();
    meta_->grad_owned = false;
  }
}

}  // namespace tfm
