#include <cmath>
#include <cstring>
#include <numeric>
#include <tuple>

#include "support/test_util.h"
#include "tfm/core/allocator.h"
#include "tfm/core/autograd_meta.h"

namespace tfm {
namespace {

// 0, 1, 2, ... as f32 in the given shape: every element tells where it came from.
Tensor iota(const Shape& shape, DType dtype = DType::f32) {
  std::vector<double> v(shape_numel(shape));
  std::iota(v.begin(), v.end(), 0.0);
  return Tensor::from_vector<double>(shape, v).to(dtype);
}

TEST(Tensor, FactoriesAndMetadata) {
  Tensor e = Tensor::empty({2, 3, 4});
  EXPECT_EQ(e.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(e.strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(e.numel(), 24);
  EXPECT_EQ(e.dim(), 3);
  EXPECT_EQ(e.nbytes(), 96u);
  EXPECT_EQ(e.size(-1), 4);
  EXPECT_EQ(e.size(0), 2);
  EXPECT_TRUE(e.is_contiguous());
  EXPECT_EQ(e.describe(), "f32 (2, 3, 4)");
  EXPECT_EQ(Tensor().describe(), "undefined");
  EXPECT_FALSE(Tensor().defined());

  Tensor z = Tensor::zeros({3}, DType::f64);
  Tensor f = Tensor::full({2, 2}, 2.5, DType::f64);
  Tensor i = Tensor::full({2}, 7.9, DType::i32);
  for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(z.at({k}), 0.0);
  EXPECT_EQ(f.at({1, 1}), 2.5);
  EXPECT_EQ(i.at({1}), 7.0);  // value conversion truncates
  EXPECT_EQ(Tensor::ones({2}).at({0}), 1.0);

  Tensor s = Tensor::full({}, 3.0);  // 0-d: one element, no axes
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item(), 3.0);
  EXPECT_EQ(s.describe(), "f32 ()");

  Tensor empty = Tensor::zeros({0, 5});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_TRUE(empty.to_vector<float>().empty());
}

TEST(Tensor, Bf16AndF16WidenExactlyToF32) {
  // Bit patterns with their values: bf16 is f32's top half; f16 covers normals, subnormals,
  // signed zero, the largest finite value and infinity.
  const std::vector<uint16_t> bf16 = {0x3f80, 0xc040, 0x0000, 0x8000, 0x7f80, 0x3c00};
  const std::vector<float> bf16_want = {1.0f, -3.0f, 0.0f, -0.0f, INFINITY, 0x1p-7f};
  const std::vector<uint16_t> f16 = {0x3c00, 0xc200, 0x0001, 0x03ff, 0x7bff, 0xfc00, 0x8000};
  const std::vector<float> f16_want = {1.0f,     -3.0f,     0x1p-24f, 1023 * 0x1p-24f,
                                       65504.0f, -INFINITY, -0.0f};
  for (auto [dtype, bits, want] :
       {std::tuple{DType::bf16, bf16, bf16_want}, std::tuple{DType::f16, f16, f16_want}}) {
    Tensor t = Tensor::empty({static_cast<int64_t>(bits.size())}, dtype);
    std::memcpy(t.raw_data(), bits.data(), bits.size() * 2);
    const std::vector<float> got = t.to(DType::f32).to_vector<float>();
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i], want[i]) << dtype_name(dtype) << " bits " << bits[i];
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i]));
    }
    EXPECT_EQ(t.to(DType::f64).to_vector<double>()[0], 1.0);
  }
  EXPECT_TRUE(std::isnan([] {
    Tensor t = Tensor::empty({1}, DType::f16);
    const uint16_t nan = 0x7e00;
    std::memcpy(t.raw_data(), &nan, 2);
    return t.to(DType::f32).to_vector<float>()[0];
  }()));
}

TEST(Tensor, FactoryErrors) {
  EXPECT_TFM_ERROR(Tensor::from_vector<float>({2, 2}, {1, 2, 3}), "needs 4 values, got 3");
  EXPECT_TFM_ERROR(Tensor::empty({2, -1}), "negative dimension in shape (2, -1)");
  EXPECT_TFM_ERROR(Tensor::empty({1 << 30, 1 << 30}), "is too large");
  EXPECT_TFM_ERROR(Tensor::zeros({2}).size(2), "axis 2 out of range for tensor f32 (2)");
  EXPECT_TFM_ERROR(Tensor::zeros({2}).data<double>(), "tensor is f32, asked for f64");
  EXPECT_TFM_ERROR(Tensor().raw_data(), "undefined tensor");
  EXPECT_TFM_ERROR(Tensor::zeros({2}).item(), "item() needs one element, tensor is f32 (2)");
}

TEST(Tensor, AtReadsAnyDtypeAndChecksIndices) {
  Tensor t = iota({2, 3});
  EXPECT_EQ(t.at({1, 2}), 5.0);
  EXPECT_EQ(iota({2, 3}, DType::i64).at({1, 0}), 3.0);
  EXPECT_EQ(iota({2, 3}, DType::u8).at({0, 1}), 1.0);
  EXPECT_TFM_ERROR(t.at({1}), "at(): 1 indices for tensor f32 (2, 3)");
  EXPECT_TFM_ERROR(t.at({0, 3}), "at(): index 3 out of range on axis 1 of f32 (2, 3)");
  EXPECT_TFM_ERROR(t.at({-1, 0}), "index -1 out of range on axis 0");
  EXPECT_TFM_ERROR(Tensor::zeros({2}, DType::bf16).at({0}), "not supported for dtype bf16");
}

TEST(Tensor, ReshapeIsAViewAndInfersMinusOne) {
  Tensor t = iota({2, 3, 4});
  Tensor r = t.reshape({-1, 4});
  EXPECT_EQ(r.shape(), (Shape{6, 4}));
  EXPECT_EQ(r.at({5, 3}), 23.0);
  EXPECT_EQ(t.reshape({4, -1}).shape(), (Shape{4, 6}));
  EXPECT_EQ(t.reshape({24}).shape(), (Shape{24}));
  EXPECT_EQ(t.reshape({2, 1, -1, 3}).shape(), (Shape{2, 1, 4, 3}));
  EXPECT_EQ(iota({1}).reshape({}).shape(), Shape{});
  EXPECT_EQ(Tensor::zeros({0, 3}).reshape({-1, 3}).shape(), (Shape{0, 3}));
  // Shared storage: writing through the view changes the original.
  r.data<float>()[0] = -7;
  EXPECT_EQ(t.at({0, 0, 0}), -7.0);
  EXPECT_EQ(r.storage(), t.storage());
}

TEST(Tensor, ReshapeErrors) {
  Tensor t = iota({2, 3});
  EXPECT_TFM_ERROR(t.reshape({4, 2}), "reshape: f32 (2, 3) cannot become (4, 2)");
  EXPECT_TFM_ERROR(t.reshape({-1, -1}), "reshape: more than one -1 in (-1, -1)");
  EXPECT_TFM_ERROR(t.reshape({-1, 4}), "reshape: cannot infer -1 in (-1, 4) for f32 (2, 3)");
  EXPECT_TFM_ERROR(t.reshape({-2, 3}), "reshape: bad dimension in (-2, 3)");
  EXPECT_TFM_ERROR(t.transpose(0, 1).reshape({6}),
                   "reshape needs a contiguous tensor, got f32 (3, 2) with strides (1, 3)");
  EXPECT_TFM_ERROR(Tensor().reshape({1}), "reshape of an undefined tensor");
}

TEST(Tensor, SliceAndSelectAreViews) {
  Tensor t = iota({4, 3});
  Tensor s = t.slice(1, 3);
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  EXPECT_EQ(s.offset(), 3);
  EXPECT_TRUE(s.is_contiguous());
  EXPECT_EQ(s.at({0, 0}), 3.0);
  EXPECT_EQ(s.at({1, 2}), 8.0);
  EXPECT_EQ(t.slice(2, 2).numel(), 0);

  Tensor r = t.select(2);
  EXPECT_EQ(r.shape(), (Shape{3}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{6, 7, 8}));
  // Views of views compose: row 1 of rows [1, 3) is row 2.
  EXPECT_EQ(s.select(1).to_vector<float>(), r.to_vector<float>());
  r.data<float>()[1] = 100;
  EXPECT_EQ(t.at({2, 1}), 100.0);
  // select on a transposed view picks a column.
  EXPECT_EQ(t.transpose(0, 1).select(2).to_vector<float>(), (std::vector<float>{2, 5, 8, 11}));

  EXPECT_TFM_ERROR(t.slice(2, 5), "slice [2, 5) out of range for f32 (4, 3)");
  EXPECT_TFM_ERROR(t.slice(3, 2), "slice [3, 2) out of range");
  EXPECT_TFM_ERROR(t.slice(-1, 2), "slice [-1, 2) out of range");
  EXPECT_TFM_ERROR(t.select(4), "select 4 out of range for f32 (4, 3)");
  EXPECT_TFM_ERROR(Tensor::full({}, 1.0).slice(0, 1), "slice of a 0-d tensor");
}

TEST(Tensor, TransposeThenContiguous) {
  Tensor t = iota({2, 3, 4});
  Tensor v = t.transpose(0, 2);  // (4, 3, 2)
  EXPECT_EQ(v.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(v.strides(), (Shape{1, 4, 12}));
  EXPECT_FALSE(v.is_contiguous());
  EXPECT_EQ(v.storage(), t.storage());
  Tensor c = v.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.storage(), t.storage());
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 2; ++k) {
        EXPECT_EQ(c.at({i, j, k}), t.at({k, j, i}));
        EXPECT_EQ(c.data<float>()[(i * 3 + j) * 2 + k], 12 * k + 4 * j + i);
      }
  EXPECT_EQ(t.transpose(-1, -3).shape(), v.shape());
  EXPECT_TRUE(t.contiguous().storage() == t.storage());  // already contiguous: itself
  // Swapping a length-1 axis moves no data and stays contiguous.
  EXPECT_TRUE(iota({3, 1}).transpose(0, 1).is_contiguous());
  EXPECT_TFM_ERROR(t.transpose(0, 3), "transpose(0, 3) out of range for f32 (2, 3, 4)");
}

TEST(Tensor, ForEachOffsetVisitsRowMajorOrder) {
  Tensor t = iota({2, 3}).transpose(0, 1);  // (3, 2) strides (1, 3)
  std::vector<int64_t> offs;
  for_each_offset(t, [&](int64_t o) { offs.push_back(o); });
  EXPECT_EQ(offs, (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
}

TEST(Tensor, CopyBetweenStridedViews) {
  // Destination: a transposed view; source: a slice of a transposed view.
  Tensor dst_base = Tensor::zeros({3, 4});
  Tensor dst = dst_base.transpose(0, 1).slice(1, 3);  // (2, 3), strides (1, 4), offset 1
  Tensor src_base = iota({3, 5});
  Tensor src = src_base.transpose(0, 1).slice(2, 4);  // (2, 3): src[i][j] = src_base[j][2 + i]
  dst.copy_(src);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(dst_base.at({j, 1 + i}), src_base.at({j, 2 + i}));
  // Elements outside the view stay zero.
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_EQ(dst_base.at({j, 0}), 0.0);
    EXPECT_EQ(dst_base.at({j, 3}), 0.0);
  }
  // Contiguous into contiguous.
  Tensor a = Tensor::zeros({2, 3});
  a.copy_(iota({2, 3}));
  EXPECT_EQ(a.to_vector<float>(), iota({2, 3}).to_vector<float>());

  EXPECT_TFM_ERROR(a.copy_(iota({3, 2})), "copy_: source f32 (3, 2) into f32 (2, 3)");
  EXPECT_TFM_ERROR(a.copy_(iota({2, 3}, DType::f64)), "copy_: dtype f64 into f32; use to()");
}

TEST(Tensor, CopyFromAnOverlappingViewUsesTheOldValues) {
  Tensor s = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  s.copy_(s.transpose(0, 1));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{1, 3, 2, 4}));
}

TEST(Tensor, FillOfUndefinedIsAnError) {
  EXPECT_TFM_ERROR(Tensor().fill_(1.0), "undefined");
}

TEST(Tensor, FromStorageChecksBounds) {
  auto st = std::make_shared<Storage>();
  st->nbytes = 40;
  st->data = cpu_allocator().allocate(st->nbytes);
  for (int k = 0; k < 10; ++k) static_cast<float*>(st->data.get())[k] = static_cast<float>(k);

  Tensor t = Tensor::from_storage(st, {2, 3}, DType::f32, 4);  // elements 4..9: exactly fits
  EXPECT_EQ(t.at({0, 0}), 4.0);
  EXPECT_EQ(t.at({1, 2}), 9.0);
  EXPECT_EQ(t.offset(), 4);
  EXPECT_EQ(Tensor::from_storage(st, {5}, DType::f64).at({4}),
            Tensor::from_storage(st, {5}, DType::f64).to_vector<double>()[4]);

  EXPECT_TFM_ERROR(Tensor::from_storage(st, {2, 3}, DType::f32, 5),
                   "from_storage: f32 (2, 3) at element 5 needs 44 bytes, storage has 40");
  EXPECT_TFM_ERROR(Tensor::from_storage(st, {6}, DType::f64), "needs 48 bytes, storage has 40");
  EXPECT_TFM_ERROR(Tensor::from_storage(st, {1}, DType::f32, -1), "at element -1");
  EXPECT_TFM_ERROR(Tensor::from_storage(nullptr, {1}, DType::f32), "from_storage: null storage");
}

TEST(Tensor, RawViewsCarryNoAutograd) {
  Tensor p = iota({2, 3}, DType::f64);
  p.set_requires_grad(true);
  EXPECT_TRUE(p.requires_grad());
  EXPECT_TRUE(p.autograd_meta()->is_leaf);
  Tensor alias = p;  // a handle copy shares the autograd state
  EXPECT_EQ(alias.autograd_meta(), p.autograd_meta());
  EXPECT_FALSE(p.reshape({6}).requires_grad());
  EXPECT_FALSE(p.slice(0, 1).requires_grad());
  EXPECT_FALSE(p.select(0).requires_grad());
  EXPECT_FALSE(p.transpose(0, 1).requires_grad());
  EXPECT_FALSE(p.detach().requires_grad());
  EXPECT_FALSE(p.clone().requires_grad());
  EXPECT_EQ(p.detach().storage(), p.storage());
  EXPECT_FALSE(p.grad().defined());
  p.set_requires_grad(false);
  EXPECT_FALSE(p.requires_grad());
  EXPECT_TFM_ERROR(Tensor::zeros({2}, DType::i32).set_requires_grad(true),
                   "only floating tensors can require grad, got i32 (2)");
}

}  // namespace
}  // namespace tfm
