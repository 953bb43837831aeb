// The memory moves above ops/ go through (ops/index.h) and the copy-to-host op (ops/host.h),
// each against element-by-element references read with Tensor::at.
#include <cmath>
#include <numeric>

#include "support/test_util.h"
#include "tfm/ops/host.h"
#include "tfm/ops/index.h"

namespace tfm {
namespace {

using testing::random_tensor;

TEST(IndexRows, GathersRowsInOrderWithRepeats) {
  const Tensor x = random_tensor({4, 3, 5}, DType::f32, 1);
  const std::vector<int64_t> rows = {3, 0, 3, 1};
  const Tensor y = index_rows(x, rows);
  ASSERT_EQ(y.shape(), (Shape{4, 3, 5}));
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t b = 0; b < 5; ++b)
        EXPECT_EQ(y.at({static_cast<int64_t>(i), a, b}), x.at({rows[i], a, b}));
  const Tensor ids = Tensor::from_vector<int32_t>({3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(index_rows(ids, {2, 0}).to_vector<int32_t>(), (std::vector<int32_t>{5, 6, 1, 2}));
  EXPECT_TFM_ERROR(index_rows(x, {4}), "row 4 out of range for 4 rows");
  EXPECT_TFM_ERROR(index_rows(x, {-1}), "out of range");
}

TEST(CopyRows, StridedViewsAsAKvCacheUsesThem) {
  // A (R, P, C) buffer with room for 6 positions; rows' positions [2, 4) written from a dense
  // (2, 2, C) block, then rows reordered into a second buffer.
  const int64_t C = 3, P = 6;
  Tensor buf = Tensor::zeros({3, P, C});
  const Tensor fresh = random_tensor({2, 2, C}, DType::f32, 2);
  auto window = [&](const Tensor& b, int64_t rows, int64_t at, int64_t len) {
    return b.slice(0, rows).transpose(0, 1).slice(at, at + len).transpose(0, 1);
  };
  copy_rows(fresh, nullptr, window(buf, 2, 2, 2));
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t c = 0; c < C; ++c) {
        const bool written = r < 2 && p >= 2 && p < 4;
        EXPECT_EQ(buf.at({r, p, c}), written ? fresh.at({r, p - 2, c}) : 0.0) << r << p << c;
      }
  Tensor other = Tensor::full({3, P, C}, 7.0);
  const std::vector<int64_t> order = {1, 1, 0};
  copy_rows(window(buf, 2, 0, 4), &order, window(other, 3, 0, 4));
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t c = 0; c < C; ++c)
        EXPECT_EQ(other.at({r, p, c}), p < 4 ? buf.at({order[r], p, c}) : 7.0);
  EXPECT_TFM_ERROR(copy_rows(fresh, nullptr, window(buf, 2, 2, 3)), "copy_rows");
  const std::vector<int64_t> bad = {0, 5};
  EXPECT_TFM_ERROR(copy_rows(fresh, &bad, window(buf, 2, 2, 2)), "row 5 out of range");
}

TEST(PickColumns, OneEntryPerRow) {
  const Tensor x = random_tensor({4, 7}, DType::f32, 3);
  const Tensor cols = Tensor::from_vector<int32_t>({4}, {6, 0, 3, 3});
  const std::vector<float> got = pick_columns(x, cols).to_vector<float>();
  const std::vector<int32_t> c = cols.to_vector<int32_t>();
  for (int64_t r = 0; r < 4; ++r) EXPECT_EQ(got[r], x.at({r, c[r]}));
  EXPECT_TFM_ERROR(pick_columns(x, Tensor::from_vector<int32_t>({4}, {0, 7, 0, 0})),
                   "column 7 of row 1 outside [0, 7)");
}

TEST(EqualMask, MarksPadding) {
  const Tensor ids = Tensor::from_vector<int32_t>({2, 3}, {5, 0, 0, 0, 9, 0});
  EXPECT_EQ(equal_mask(ids, 0).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 1, 1, 0, 1}));
  EXPECT_TFM_ERROR(equal_mask(Tensor::zeros({2}), 0), "must be i32");
}

TEST(ToHost, ViewsCpuTensorsInPlaceAndPacksStridedOnes) {
  const Tensor x = random_tensor({3, 4}, DType::f32, 4);
  const HostView<float> v = to_host<float>(x);
  EXPECT_EQ(v.data(), x.data<float>());  // no copy on the CPU
  ASSERT_EQ(v.size(), 12u);
  const Tensor t = x.transpose(0, 1);  // strided: packed once, row-major
  const HostView<float> w = to_host<float>(t);
  ASSERT_EQ(w.size(), 12u);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(w[static_cast<size_t>(i * 3 + j)], x.at({j, i}));
  EXPECT_TRUE(to_host<float>(Tensor()).empty());
  EXPECT_TFM_ERROR(to_host<int32_t>(x), "asked for i32");
}

}  // namespace
}  // namespace tfm
