#include "tfm/ops/index.h"

#include "tfm/ops/cpu/index_cpu.h"
#include "tfm/ops/dispatch.h"

namespace tfm {

Tensor index_rows(const Tensor& x, const std::vector<int64_t>& rows) {
  check_on_cpu(x, "index_rows", "x");
  TFM_CHECK(x.dim() >= 1) << "index_rows: x must have an axis 0, got " << x.describe();
  const Tensor src = x.contiguous();
  const int64_t b = src.size(0);
  for (int64_t r : rows)
    TFM_CHECK(r >= 0 && r < b) << "index_rows: row " << r << " out of range for " << b << " rows";
  Shape shape = src.shape();
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor out = Tensor::empty(shape, src.dtype());
  const size_t row_bytes = b > 0 ? src.nbytes() / static_cast<size_t>(b) : 0;
  const auto stride = static_cast<int64_t>(row_bytes);
  cpu::copy_rows(static_cast<int64_t>(rows.size()), row_bytes, src.raw_data(), stride, rows.data(),
                 out.raw_data(), stride);
  return out;
}

void copy_rows(const Tensor& src, const std::vector<int64_t>* index, const Tensor& dst) {
  check_on_cpu(src, "copy_rows", "src");
  check_on_cpu(dst, "copy_rows", "dst");
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
  cpu::copy_rows(rows, static_cast<size_t>(len * width * es), src.raw_data(), src.strides()[0] * es,
                 index ? index->data() : nullptr, dst.raw_data(), dst.strides()[0] * es);
}

Tensor pick_columns(const Tensor& x_in, const Tensor& cols_in) {
  check_on_cpu(x_in, "pick_columns", "x");
  check_on_cpu(cols_in, "pick_columns", "cols");
  TFM_CHECK(x_in.dtype() == DType::f32 && x_in.dim() == 2)
      << "pick_columns: x must be f32 (R, V), got " << x_in.describe();
  TFM_CHECK(cols_in.dtype() == DType::i32 && cols_in.dim() == 1 && cols_in.size(0) == x_in.size(0))
      << "pick_columns: cols must be i32 (" << x_in.size(0) << "), got " << cols_in.describe();
  const Tensor x = x_in.contiguous(), cols = cols_in.contiguous();
  const int64_t rows = x.size(0), v = x.size(1);
  const int32_t* c = cols.data<int32_t>();
  for (int64_t r = 0; r < rows; ++r)
    TFM_CHECK(c[r] >= 0 && c[r] < v)
        << "pick_columns: column " << c[r] << " of row " << r << " outside [0, " << v << ")";
  Tensor out = Tensor::empty({rows});
  cpu::pick_columns(rows, v, x.data<float>(), c, out.data<float>());
  return out;
}

Tensor equal_mask(const Tensor& ids_in, int64_t value) {
  check_on_cpu(ids_in, "equal_mask", "ids");
  TFM_CHECK(ids_in.dtype() == DType::i32)
      << "equal_mask: ids must be i32, got " << ids_in.describe();
  const Tensor ids = ids_in.contiguous();
  Tensor m = Tensor::empty(ids.shape(), DType::u8);
  const int32_t* p = ids.data<int32_t>();
  uint8_t* q = m.data<uint8_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) q[i] = p[i] == value ? 1 : 0;
  return m;
}

}  // namespace tfm
