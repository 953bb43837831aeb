#include "tfm/ops/shape.h"

#include <algorithm>
#include <utility>

#include "tfm/autograd/tape.h"
#include "tfm/ops/cpu/shape_cpu.h"
#include "tfm/ops/dispatch.h"
#ifdef TFM_WITH_CUDA
#include "tfm/core/cuda/strided_copy.h"
#endif

namespace tfm {

namespace {

bool any_needs_grad(const std::vector<Tensor>& xs) {
  for (const Tensor& x : xs)
    if (autograd::needs_grad({&x})) return true;
  return false;
}

void check_input(const Tensor& t, const char* op, const char* name) {
  TFM_CHECK(t.defined()) << op << ": " << name << " is undefined";
}

int64_t normalize_axis(int64_t axis, const Tensor& x, const char* op) {
  const int64_t nd = x.dim();
  TFM_CHECK(axis >= -nd && axis < nd)
      << op << ": axis " << axis << " out of range for " << x.describe();
  return axis < 0 ? axis + nd : axis;
}

// x as a contiguous tensor: itself when it already is, else a parallel strided gather (on the
// device, Tensor::contiguous's kernel).
Tensor materialise(const Tensor& x) {
  if (x.is_contiguous()) return x;
  if (x.device() != Device::cpu) return x.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  cpu::gather_strided(x.shape(), x.strides(), dtype_size(x.dtype()), x.raw_data(), out.raw_data());
  return out;
}

// outer blocks of len elements of es bytes, src and dst rows src_stride / dst_stride elements
// apart, on `device` (both ends there).
void copy_blocks(Device device, int64_t outer, int64_t len, size_t es, const void* src,
                 int64_t src_stride, void* dst, int64_t dst_stride) {
#ifdef TFM_WITH_CUDA
  if (device == Device::cuda) {
    cuda::copy_2d(outer, static_cast<size_t>(len) * es, src, static_cast<size_t>(src_stride) * es,
                  dst, static_cast<size_t>(dst_stride) * es);
    return;
  }
#endif
  TFM_CHECK(device == Device::cpu) << "shape ops: no kernel on " << device_name(device);
  cpu::copy_blocks(outer, len, es, src, src_stride, dst, dst_stride);
}

// Sizes of a contiguous x seen as (outer, x.size(axis), inner).
struct AxisView {
  int64_t outer = 1, size = 0, inner = 1;
};
AxisView axis_view(const Shape& shape, int64_t axis) {
  AxisView v;
  for (int64_t d = 0; d < axis; ++d) v.outer *= shape[d];
  v.size = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d) v.inner *= shape[d];
  return v;
}

// Raw transpose, no autograd.
Tensor transpose_raw(const Tensor& x, int64_t d0, int64_t d1) {
  return materialise(x.transpose(d0, d1));
}

// Raw narrow of a contiguous x, no autograd: a view when the slab is contiguous in x.
Tensor narrow_raw(const Tensor& x, int64_t axis, int64_t start, int64_t length) {
  const AxisView v = axis_view(x.shape(), axis);
  Shape out_shape = x.shape();
  out_shape[axis] = length;
  if (v.outer == 1 || length == v.size)
    return x.reshape({v.outer * v.size, v.inner})
        .slice(v.outer == 1 ? start : 0, v.outer == 1 ? start + length : v.size * v.outer)
        .reshape(out_shape);
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  const size_t es = dtype_size(x.dtype());
  copy_blocks(x.device(), v.outer, length * v.inner, es,
              static_cast<const char*>(x.raw_data()) + start * v.inner * es, v.size * v.inner,
              out.raw_data(), length * v.inner);
  return out;
}

// Raw concat of contiguous parts along axis into a new tensor of shape out_shape.
Tensor concat_raw(const std::vector<Tensor>& parts, int64_t axis, const Shape& out_shape,
                  DType dtype) {
  Tensor out = Tensor::empty(out_shape, dtype, parts[0].device());
  const AxisView ov = axis_view(out_shape, axis);
  const size_t es = dtype_size(dtype);
  int64_t at = 0;
  for (const Tensor& p : parts) {
    const int64_t len = p.size(axis) * ov.inner;
    copy_blocks(out.device(), ov.outer, len, es, p.raw_data(), len,
                static_cast<char*>(out.raw_data()) + at * ov.inner * es, ov.size * ov.inner);
    at += p.size(axis);
  }
  return out;
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  check_input(x, "reshape", "x");
  Tensor y = materialise(x).reshape(shape);
  if (autograd::needs_grad({&x})) {
    autograd::record("reshape", {&x}, {&y},
                     [in_shape = x.shape()](const autograd::Grads& g, const autograd::Needs&) {
                       return autograd::Grads{materialise(g[0]).reshape(in_shape)};
                     });
  }
  return y;
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  check_input(x, "transpose", "x");
  const int64_t nd = x.dim();
  TFM_CHECK(d0 >= -nd && d0 < nd && d1 >= -nd && d1 < nd)
      << "transpose: axes (" << d0 << ", " << d1 << ") out of range for " << x.describe();
  Tensor y = transpose_raw(x, d0, d1);
  if (autograd::needs_grad({&x})) {
    autograd::record("transpose", {&x}, {&y},
                     [d0, d1](const autograd::Grads& g, const autograd::Needs&) {
                       return autograd::Grads{transpose_raw(g[0], d0, d1)};
                     });
  }
  return y;
}

Tensor narrow(const Tensor& x, int64_t axis, int64_t start, int64_t length) {
  check_input(x, "narrow", "x");
  axis = normalize_axis(axis, x, "narrow");
  const int64_t size = x.size(axis);
  TFM_CHECK(start >= 0 && length >= 0 && start <= size && length <= size - start)
      << "narrow: [" << start << ", " << start << " + " << length << ") out of range on axis "
      << axis << " of " << x.describe();
  Tensor y = narrow_raw(materialise(x), axis, start, length);
  if (autograd::needs_grad({&x})) {
    autograd::record(
        "narrow", {&x}, {&y},
        [in_shape = x.shape(), axis, start](const autograd::Grads& g, const autograd::Needs&) {
          Tensor gy = materialise(g[0]);
          Tensor gx = Tensor::zeros(in_shape, gy.dtype(), gy.device());
          const AxisView v = axis_view(in_shape, axis);
          const int64_t len = gy.size(axis) * v.inner;
          const size_t es = dtype_size(gy.dtype());
          copy_blocks(gx.device(), v.outer, len, es, gy.raw_data(), len,
                      static_cast<char*>(gx.raw_data()) + start * v.inner * es, v.size * v.inner);
          return autograd::Grads{gx};
        });
  }
  return y;
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  TFM_CHECK(!xs.empty()) << "concat: no inputs";
  for (size_t i = 0; i < xs.size(); ++i)
    TFM_CHECK(xs[i].defined()) << "concat: input " << i << " is undefined";
  check_input(xs[0], "concat", "input 0");
  axis = normalize_axis(axis, xs[0], "concat");
  const Tensor& x0 = xs[0];
  Shape out_shape = x0.shape();
  out_shape[axis] = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    check_input(x, "concat", "an input");
    TFM_CHECK(x.dtype() == x0.dtype()) << "concat: input " << i << " " << x.describe()
                                       << " has another dtype than input 0 " << x0.describe();
    check_same_device(x0, x, "concat");
    bool match = x.dim() == x0.dim();
    for (int64_t d = 0; match && d < x.dim(); ++d) match = d == axis || x.size(d) == x0.size(d);
    TFM_CHECK(match) << "concat: input " << i << " " << x.describe() << " does not match input 0 "
                     << x0.describe() << " outside axis " << axis;
    out_shape[axis] += x.size(axis);
  }
  std::vector<Tensor> parts;
  for (const Tensor& x : xs) parts.push_back(materialise(x));
  Tensor y = concat_raw(parts, axis, out_shape, x0.dtype());
  if (any_needs_grad(xs)) {
    std::vector<const Tensor*> in;
    for (const Tensor& x : xs) in.push_back(&x);
    std::vector<int64_t> sizes;
    for (const Tensor& x : xs) sizes.push_back(x.size(axis));
    autograd::record("concat", in, std::vector<Tensor*>{&y},
                     [sizes, axis](const autograd::Grads& g, const autograd::Needs& needs) {
                       Tensor gy = materialise(g[0]);
                       autograd::Grads gx(sizes.size());
                       int64_t at = 0;
                       for (size_t i = 0; i < sizes.size(); ++i) {
                         if (needs[i]) gx[i] = materialise(narrow_raw(gy, axis, at, sizes[i]));
                         at += sizes[i];
                       }
                       return gx;
                     });
  }
  return y;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
  check_input(x, "split", "x");
  axis = normalize_axis(axis, x, "split");
  TFM_CHECK(!sizes.empty()) << "split: no sizes for " << x.describe();
  int64_t total = 0;
  for (int64_t s : sizes) {
    TFM_CHECK(s >= 0) << "split: negative size in " << shape_str(sizes) << " for " << x.describe();
    total += s;
  }
  TFM_CHECK(total == x.size(axis))
      << "split: sizes " << shape_str(sizes) << " sum to " << total << ", but axis " << axis
      << " of " << x.describe() << " has " << x.size(axis);
  Tensor xc = materialise(x);
  std::vector<Tensor> ys;
  int64_t at = 0;
  for (int64_t s : sizes) {
    ys.push_back(materialise(narrow_raw(xc, axis, at, s)));
    at += s;
  }
  if (autograd::needs_grad({&x})) {
    std::vector<Tensor*> out;
    for (Tensor& y : ys) out.push_back(&y);
    autograd::record(
        "split", std::vector<const Tensor*>{&x}, out,
        [in_shape = x.shape(), axis](const autograd::Grads& g, const autograd::Needs&) {
          std::vector<Tensor> parts;
          for (const Tensor& t : g) parts.push_back(materialise(t));
          return autograd::Grads{concat_raw(parts, axis, in_shape, parts[0].dtype())};
        });
  }
  return ys;
}

}  // namespace tfm
