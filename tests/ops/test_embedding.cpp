#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/elementwise.h"
#include "tfm/ops/embedding.h"

namespace tfm {
namespace {

using testing::bitwise_equal;
using testing::gradcheck;
using testing::random_ids;
using testing::random_tensor;

using testing::with_threads;

Tensor ids_of(const Shape& shape, const std::vector<int32_t>& v) {
  return Tensor::from_vector<int32_t>(shape, v);
}

TEST(Embedding, ForwardGathersRows) {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor w = random_tensor({5, 4}, dt, 1);
    Tensor ids = ids_of({2, 3}, {4, 0, 4, 2, 2, 1});
    Tensor y = embedding(ids, w);
    ASSERT_EQ(y.shape(), (Shape{2, 3, 4}));
    EXPECT_EQ(y.dtype(), dt);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        const int64_t id = static_cast<int64_t>(ids.at({i, j}));
        EXPECT_TRUE(bitwise_equal(y.select(i).select(j), w.select(id))) << i << "," << j;
      }
    // The padding row is still looked up normally in the forward.
    EXPECT_TRUE(bitwise_equal(embedding(ids, w, 2), y));
  }
  // Scalar ids give one row; empty ids give no rows; strided ids are read in logical order.
  Tensor w = random_tensor({6, 3}, DType::f32, 2);
  EXPECT_TRUE(bitwise_equal(embedding(ids_of({}, {3}), w), w.select(3)));
  EXPECT_EQ(embedding(ids_of({0}, {}), w).shape(), (Shape{0, 3}));
  Tensor ids = ids_of({2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_TRUE(bitwise_equal(embedding(ids.transpose(0, 1), w),
                            embedding(ids.transpose(0, 1).contiguous(), w)));
}

TEST(Embedding, Gradients) {
  struct Case {
    Shape ids_shape;
    int64_t v, c;
  };
  for (Case k : {Case{{2, 3}, 5, 4}, Case{{1}, 1, 1}, Case{{7}, 3, 1}, Case{{3, 7}, 11, 5},
                 Case{{1, 1}, 4, 9}, Case{{2, 2, 2}, 2, 3}}) {
    Tensor w = random_tensor({k.v, k.c}, DType::f64, k.v).set_requires_grad(true);
    Tensor ids = random_ids(k.ids_shape, k.v, k.c);  // repeats whenever numel > V
    EXPECT_TRUE(gradcheck([&](auto& in) { return embedding(ids, in[0]); }, {w}))
        << shape_str(k.ids_shape) << " V " << k.v;
  }
}

TEST(Embedding, GradientsWithPadding) {
  // Padding id present (several times) and repeated ids. The padding row is read by the forward
  // but gets no gradient, so the checked function masks padded positions out: then the numeric
  // gradient of that row is zero too, and every other row is checked as usual.
  const int64_t pad = 2;
  Tensor ids = ids_of({3, 4}, {2, 0, 1, 2, 3, 3, 3, 0, 2, 4, 4, 1});
  std::vector<double> keep(12 * 3);
  for (int64_t i = 0; i < 12; ++i)
    for (int64_t j = 0; j < 3; ++j) keep[i * 3 + j] = ids.to_vector<int32_t>()[i] == pad ? 0 : 1;
  Tensor mask = Tensor::from_vector<double>({3, 4, 3}, keep);
  Tensor w = random_tensor({5, 3}, DType::f64, 3).set_requires_grad(true);
  EXPECT_TRUE(gradcheck([&](auto& in) { return mul(embedding(ids, in[0], pad), mask); }, {w}));
}

TEST(Embedding, BackwardAddsRepeatsAndSkipsPadding) {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor w = random_tensor({4, 2}, dt, 4).set_requires_grad(true);
    Tensor ids = ids_of({5}, {1, 3, 1, 0, 1});
    Tensor g =
        Tensor::from_vector<double>({5, 2}, {1, 2, 10, 20, 100, 200, 1000, 2000, 0.5, 0.25}).to(dt);
    autograd::backward(embedding(ids, w, /*padding_idx=*/0), g);
    Tensor expected =
        Tensor::from_vector<double>({4, 2}, {0, 0, 101.5, 202.25, 0, 0, 10, 20}).to(dt);
    EXPECT_TRUE(bitwise_equal(w.grad(), expected));  // row 0: padding, row 2: unused

    // Without padding, row 0 gets its gradient.
    w.zero_grad();
    autograd::backward(embedding(ids, w), g);
    EXPECT_EQ(w.grad().at({0, 0}), 1000.0);
    EXPECT_EQ(w.grad().at({0, 1}), 2000.0);
  }
}

TEST(Embedding, PaddingRowGradientStaysExactlyZero) {
  const int64_t v = 50, c = 8, pad = 7;
  Tensor w = random_tensor({v, c}, DType::f32, 5).set_requires_grad(true);
  Tensor ids = random_ids({6, 40}, v, 6);
  ids.data<int32_t>()[3] = pad;  // make sure the padding id occurs
  ids.data<int32_t>()[100] = pad;
  Tensor g = random_tensor({6, 40, c}, DType::f32, 7);
  autograd::backward(embedding(ids, w, pad), g);
  EXPECT_TRUE(bitwise_equal(w.grad().select(pad), Tensor::zeros({c})));
  EXPECT_FALSE(bitwise_equal(w.grad().select(ids.to_vector<int32_t>()[0]), Tensor::zeros({c})));
}

TEST(Embedding, TiedUseAccumulatesAndSavedIdsAreOurs) {
  Tensor w = random_tensor({3, 2}, DType::f64, 8).set_requires_grad(true);
  Tensor ids = ids_of({2}, {2, 2});
  Tensor y = add(embedding(ids, w), embedding(ids_of({2}, {1, 2}), w));
  ids.data<int32_t>()[0] = 0;  // the caller reuses its buffer before backward
  autograd::backward(y, Tensor::ones({2, 2}, DType::f64));
  EXPECT_TRUE(bitwise_equal(w.grad(), Tensor::from_vector<double>({3, 2}, {0, 0, 1, 1, 3, 3})));
}

TEST(Embedding, NoGradientNoTape) {
  const size_t before = autograd::tape_size();
  Tensor y = embedding(ids_of({2}, {0, 1}), random_tensor({2, 2}, DType::f32, 9));
  EXPECT_FALSE(y.requires_grad());
  EXPECT_EQ(autograd::tape_size(), before);
}

TEST(Embedding, SameBitsForAnyThreadCount) {
  const int64_t v = 1000, c = 48;
  Tensor w0 = random_tensor({v, c}, DType::f32, 10);
  Tensor ids = random_ids({40, 500}, v, 11);  // 20000 tokens, ~20 repeats per row
  Tensor g = random_tensor({40, 500, c}, DType::f32, 12);
  auto run = [&](int threads) {
    return with_threads(threads, [&] {
      Tensor w = w0.clone().set_requires_grad(true);
      Tensor y = embedding(ids, w, 3);
      autograd::backward(y, g);
      return std::make_pair(y.detach(), w.grad());
    });
  };
  auto [y1, g1] = run(1);
  auto [y2, g2] = run(2);
  EXPECT_TRUE(bitwise_equal(y1, y2));
  EXPECT_TRUE(bitwise_equal(g1, g2));
  // And the backward sums each row in position order: compare with a serial reference loop.
  std::vector<float> ref(v * c, 0.0f);
  const auto idv = ids.to_vector<int32_t>();
  const auto gv = g.to_vector<float>();
  for (size_t i = 0; i < idv.size(); ++i)
    if (idv[i] != 3)
      for (int64_t j = 0; j < c; ++j) ref[idv[i] * c + j] += gv[i * c + j];
  EXPECT_TRUE(bitwise_equal(g1, Tensor::from_vector<float>({v, c}, ref)));
}

TEST(Embedding, Errors) {
  Tensor w = Tensor::zeros({5, 3});
  EXPECT_TFM_ERROR(embedding(ids_of({2}, {0, 5}), w),
                   "embedding: id 5 at position (1) of ids i32 (2) is outside [0, V) for V = 5");
  EXPECT_TFM_ERROR(embedding(ids_of({2, 2}, {0, -1, 3, 9}), w),
                   "embedding: id -1 at position (0, 1) of ids i32 (2, 2) is outside [0, V) for "
                   "V = 5 (weight f32 (5, 3))");
  EXPECT_TFM_ERROR(embedding(ids_of({2, 3}, {0, 1, 2, 3, 4, 77}), w), "id 77 at position (1, 2)");
  EXPECT_TFM_ERROR(embedding(Tensor::zeros({2}, DType::i64), w),
                   "embedding: ids must be i32, got i64 (2)");
  EXPECT_TFM_ERROR(embedding(Tensor::zeros({2}), w), "embedding: ids must be i32, got f32 (2)");
  EXPECT_TFM_ERROR(embedding(Tensor(), w), "embedding: ids is undefined");
  EXPECT_TFM_ERROR(embedding(ids_of({1}, {0}), Tensor::zeros({5})),
                   "embedding: weight must be (V, C), got f32 (5)");
  EXPECT_TFM_ERROR(embedding(ids_of({1}, {0}), Tensor::zeros({5, 3}, DType::i32)),
                   "embedding: weight must be f32 or f64");
  EXPECT_TFM_ERROR(embedding(ids_of({1}, {0}), w, 5),
                   "embedding: padding_idx 5 is not a row of weight f32 (5, 3)");
}

}  // namespace
}  // namespace tfm
