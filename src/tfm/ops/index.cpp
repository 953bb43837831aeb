#include "tfm/ops/index.h"

#include <cstdint>
#include <string>
#include <vector>

#include "tfm/core/device_copy.h"
#include "tfm/ops/cpu/index_cpu.h"
#include "tfm/ops/dispatch.h"
#include "tfm/ops/host.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/index.h"
#endif

namespace tfm {

#ifdef TFM_WITH_CUDA
namespace {

// The row indices as an i32 tensor on `device` (checked already: each fits in int32).
Tensor index_tensor(const int64_t* index, int64_t n, Device device) {
  std::vector<int32_t> v(index, index + n);
  for (int64_t i = 0; i < n; ++i)
    TFM_CHECK(index[i] <= INT32_MAX) << "row index " << index[i] << " is outside int32";
  return to_device(Tensor::from_vector({n}, v), device);
}

}  // namespace
#endif

Tensor index_rows(const Tensor& x, const std::vector<int64_t>& rows) {
  TFM_CHECK(x.defined()) << "index_rows: x is undefined";
  TFM_CHECK(x.dim() >= 1) << "index_rows: x must have an axis 0, got " << x.describe();
  const Tensor src = x.contiguous();
  const int64_t b = src.size(0);
  for (int64_t r : rows)
    TFM_CHECK(r >= 0 && r < b) << "index_rows: row " << r << " out of range for " << b << " rows";
  Shape shape = src.shape();
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor out = Tensor::empty(shape, src.dtype(), src.device());
  const size_t row_bytes = b > 0 ? src.nbytes() / static_cast<size_t>(b) : 0;
  const auto stride = static_cast<int64_t>(row_bytes);
#ifdef TFM_WITH_CUDA
  if (on_cuda(src)) {
    const auto n = static_cast<int64_t>(rows.size());
    const Tensor idx = index_tensor(rows.data(), n, Device::cuda);
    cuda::copy_rows(n, row_bytes, src.raw_data(), stride, idx.data<int32_t>(), out.raw_data(),
                    stride);
    return out;
  }
#endif
  check_on_cpu(src, "index_rows", "x");
  cpu::copy_rows(static_cast<int64_t>(rows.size()), row_bytes, src.raw_data(), stride, rows.data(),
                 out.raw_data(), stride);
  return out;
}

void copy_rows(const Tensor& src, const std::vector<int64_t>* index, const Tensor& dst) {
  TFM_CHECK(src.defined() && dst.defined()) << "copy_rows: src or dst is undefined";
  check_same_device(src, dst, "copy_rows");
  TFM_CHECK(src.dim() == 3 && dst.dim() == 3 && src.size(1) == dst.size(1) &&
            src.size(2) == dst.size(2) && src.dtype() == dst.dtype())
      << "copy_rows: rows of " << src.describe() << " into " << dst.describe();
  const int64_t rows = dst.size(0), len = dst.size(1), width = dst.size(2);
  for (const Tensor* t : {&src, &dst})
    TFM_CHECK(len <= 1 || t->strides()[1] == width)
        << "copy_rows: " << t->describe() << " is not dense along its last two axes";
  for (const Tensor* t : {&src, &dst})
    TFM_CHECK(width <= 1 || t->strides()[2] == 1)
        << "copy_rows: " << t->describe() << " is not dense along its last axis";
  TFM_CHECK(!index || static_cast<int64_t>(index->size()) >= rows)
      << "copy_rows: " << index->size() << " indices for " << rows << " rows";
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t from = index ? (*index)[i] : i;
    TFM_CHECK(from >= 0 && from < src.size(0))
        << "copy_rows: row " << from << " out of range for " << src.size(0) << " rows";
  }
  if (rows == 0 || len == 0 || width == 0) return;
  const auto es = static_cast<int64_t>(dtype_size(src.dtype()));
#ifdef TFM_WITH_CUDA
  if (on_cuda(src)) {
    const Tensor idx = index ? index_tensor(index->data(), rows, Device::cuda) : Tensor();
    cuda::copy_rows(rows, static_cast<size_t>(len * width * es), src.raw_data(),
                    src.strides()[0] * es, index ? idx.data<int32_t>() : nullptr, dst.raw_data(),
                    dst.strides()[0] * es);
    return;
  }
#endif
  check_on_cpu(src, "copy_rows", "src");
  cpu::copy_rows(rows, static_cast<size_t>(len * width * es), src.raw_data(), src.strides()[0] * es,
                 index ? index->data() : nullptr, dst.raw_data(), dst.strides()[0] * es);
}

Tensor pick_columns(const Tensor& x_in, const Tensor& cols_in) {
  TFM_CHECK(x_in.defined() && cols_in.defined()) << "pick_columns: x or cols is undefined";
  check_same_device(x_in, cols_in, "pick_columns");
  TFM_CHECK(x_in.dtype() == DType::f32 && x_in.dim() == 2)
      << "pick_columns: x must be f32 (R, V), got " << x_in.describe();
  TFM_CHECK(cols_in.dtype() == DType::i32 && cols_in.dim() == 1 && cols_in.size(0) == x_in.size(0))
      << "pick_columns: cols must be i32 (" << x_in.size(0) << "), got " << cols_in.describe();
  const Tensor x = x_in.contiguous(), cols = cols_in.contiguous();
  const int64_t rows = x.size(0), v = x.size(1);
  {
    const HostView<int32_t> c = to_host<int32_t>(cols);  // checked on the host: R values
    for (int64_t r = 0; r < rows; ++r)
      TFM_CHECK(c[r] >= 0 && c[r] < v)
          << "pick_columns: column " << c[r] << " of row " << r << " outside [0, " << v << ")";
  }
  Tensor out = Tensor::empty({rows}, DType::f32, x.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(x)) {
    cuda::pick_columns(rows, v, x.data<float>(), cols.data<int32_t>(), out.data<float>());
    return out;
  }
#endif
  cpu::pick_columns(rows, v, x.data<float>(), cols.data<int32_t>(), out.data<float>());
  return out;
}

Tensor equal_mask(const Tensor& ids_in, int64_t value) {
  TFM_CHECK(ids_in.defined() && ids_in.dtype() == DType::i32)
      << "equal_mask: ids must be i32, got "
      << (ids_in.defined() ? ids_in.describe() : std::string("an undefined tensor"));
  const Tensor ids = ids_in.contiguous();
  Tensor m = Tensor::empty(ids.shape(), DType::u8, ids.device());
#ifdef TFM_WITH_CUDA
  if (on_cuda(ids)) {
    TFM_CHECK(value >= INT32_MIN && value <= INT32_MAX)
        << "equal_mask: value " << value << " is outside int32";
    cuda::equal_mask(ids.numel(), ids.data<int32_t>(), static_cast<int32_t>(value),
                     m.data<uint8_t>());
    return m;
  }
#endif
  check_on_cpu(ids, "equal_mask", "ids");
  const int32_t* p = ids.data<int32_t>();
  uint8_t* q = m.data<uint8_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) q[i] = p[i] == value ? 1 : 0;
  return m;
}

}  // namespace tfm
