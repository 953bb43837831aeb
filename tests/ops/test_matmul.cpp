#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/elementwise.h"
#include "tfm/ops/matmul.h"

namespace tfm {
namespace {

using testing::gradcheck;
using testing::random_tensor;

// Shapes of a and b for the product (batch..., m, k)·(batch..., k, n) with the given flags.
Shape a_shape(const Shape& batch, int64_t m, int64_t k, bool ta) {
  Shape s = batch;
  s.push_back(ta ? k : m);
  s.push_back(ta ? m : k);
  return s;
}
Shape b_shape(const Shape& batch, int64_t k, int64_t n, bool tb) {
  Shape s = batch;
  s.push_back(tb ? n : k);
  s.push_back(tb ? k : n);
  return s;
}

// Triple loop in double over logical indices: the definition, independent of any GEMM.
Tensor reference_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const Tensor a64 = a.to(DType::f64).contiguous(), b64 = b.to(DType::f64).contiguous();
  const int64_t m = ta ? a.size(-1) : a.size(-2), k = ta ? a.size(-2) : a.size(-1);
  const int64_t n = tb ? b.size(-2) : b.size(-1);
  Shape out(a.shape().begin(), a.shape().end() - 2);
  const int64_t batch = shape_numel(out);
  out.push_back(m);
  out.push_back(n);
  std::vector<double> c(shape_numel(out), 0.0);
  const double* pa = a64.data<double>();
  const double* pb = b64.data<double>();
  for (int64_t z = 0; z < batch; ++z)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double av = ta ? pa[z * m * k + p * m + i] : pa[z * m * k + i * k + p];
          const double bv = tb ? pb[z * k * n + j * k + p] : pb[z * k * n + p * n + j];
          s += av * bv;
        }
        c[z * m * n + i * n + j] = s;
      }
  return Tensor::from_vector<double>(out, c);
}

struct Case {
  Shape batch;
  int64_t m, k, n;
};
const Case kCases[] = {{{}, 1, 1, 1},  {{}, 5, 7, 3},     {{}, 1, 9, 4},
                       {{2}, 3, 1, 6}, {{2, 3}, 4, 5, 2}, {{1}, 6, 3, 1}};

TEST(Matmul, ForwardMatchesDefinitionForAllTransposes) {
  uint64_t seed = 1;
  for (const Case& c : kCases)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "batch " << shape_str(c.batch) << " m=" << c.m << " k="
                                          << c.k << " n=" << c.n << " ta=" << ta << " tb=" << tb);
        Tensor a64 = random_tensor(a_shape(c.batch, c.m, c.k, ta), DType::f64, seed++);
        Tensor b64 = random_tensor(b_shape(c.batch, c.k, c.n, tb), DType::f64, seed++);
        Tensor ref = reference_matmul(a64, b64, ta, tb);
        EXPECT_TRUE(testing::all_close(matmul(a64, b64, ta, tb), ref, 1e-14, 1e-14));
        Tensor a32 = a64.to(DType::f32), b32 = b64.to(DType::f32);
        Tensor c32 = matmul(a32, b32, ta, tb);
        EXPECT_EQ(c32.dtype(), DType::f32);
        EXPECT_TRUE(testing::all_close(c32, reference_matmul(a32, b32, ta, tb), 1e-5, 1e-6));
      }
}

TEST(Matmul, TransposeFlagEqualsTransposedCopy) {
  Tensor a = random_tensor({2, 7, 5}, DType::f32, 3);
  Tensor b = random_tensor({2, 6, 7}, DType::f32, 4);
  // aᵀ (5, 7) · bᵀ (7, 6) with flags versus with materialised transposes.
  Tensor at = a.transpose(1, 2).contiguous(), bt = b.transpose(1, 2).contiguous();
  EXPECT_TRUE(testing::all_close(matmul(a, b, true, true), matmul(at, bt), 1e-6, 1e-6));
  // A strided (non-contiguous) view is accepted and read in logical order.
  EXPECT_TRUE(testing::bitwise_equal(matmul(a.transpose(1, 2), bt), matmul(at, bt)));
}

TEST(Matmul, GradcheckAllTransposes) {
  uint64_t seed = 100;
  for (const Case& c : kCases)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "batch " << shape_str(c.batch) << " m=" << c.m << " k="
                                          << c.k << " n=" << c.n << " ta=" << ta << " tb=" << tb);
        Tensor a = random_tensor(a_shape(c.batch, c.m, c.k, ta), DType::f64, seed++);
        Tensor b = random_tensor(b_shape(c.batch, c.k, c.n, tb), DType::f64, seed++);
        a.set_requires_grad(true);
        b.set_requires_grad(true);
        EXPECT_TRUE(gradcheck([=](auto& in) { return matmul(in[0], in[1], ta, tb); }, {a, b}));
      }
}

TEST(Matmul, GradientOfOneOperandOnly) {
  Tensor a = random_tensor({3, 4}, DType::f64, 5).set_requires_grad(true);
  Tensor b = random_tensor({4, 2}, DType::f64, 6);
  EXPECT_TRUE(gradcheck([](auto& in) { return matmul(in[0], in[1]); }, {a, b}));
  a.zero_grad();  // gradcheck left its gradient there; leaf gradients accumulate
  autograd::backward(matmul(a, b), Tensor::ones({3, 2}, DType::f64));
  EXPECT_FALSE(b.grad().defined());
  // d/da Σ(a·b) = 1·bᵀ: row sums of b in every row.
  EXPECT_NEAR(a.grad().at({2, 1}), b.at({1, 0}) + b.at({1, 1}), 1e-15);
  // The same operand on both sides: d(aᵀa) reaches a twice.
  Tensor s = random_tensor({4, 3}, DType::f64, 7).set_requires_grad(true);
  EXPECT_TRUE(gradcheck([](auto& in) { return matmul(in[0], in[0], true, false); }, {s}));
}

TEST(Matmul, F32AgreesWithF64OnLargerShapes) {
  Tensor a = random_tensor({3, 67, 129}, DType::f64, 8);
  Tensor b = random_tensor({3, 255, 129}, DType::f64, 9);
  Tensor c64 = matmul(a, b, false, true);
  Tensor c32 = matmul(a.to(DType::f32), b.to(DType::f32), false, true);
  EXPECT_TRUE(testing::all_close(c32, c64, 1e-5, 2e-5));
}

TEST(Matmul, EmptyAndZeroInnerDimension) {
  Tensor c = matmul(Tensor::zeros({2, 0, 3}), Tensor::zeros({2, 3, 4}));
  EXPECT_EQ(c.shape(), (Shape{2, 0, 4}));
  // K = 0: an empty sum, so zeros (not uninitialised memory).
  Tensor z = matmul(Tensor::full({3, 0}, 1.0), Tensor::full({0, 2}, 1.0));
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(6, 0.0f));
}

TEST(Matmul, ThreadCountDoesNotChangeResult) {
  // Batched attention-like products (many small GEMMs, one per thread) and one large GEMM. oneDNN
  // splits M and N across threads for these shapes, never K, so every dot product is summed in
  // the same order whatever the thread count.
  Tensor a = random_tensor({8, 33, 64}, DType::f32, 10),
         b = random_tensor({8, 33, 64}, DType::f32, 11);
  Tensor x = random_tensor({256, 512}, DType::f32, 12),
         w = random_tensor({384, 512}, DType::f32, 13);
  const int saved = get_threads();
  Tensor r[2][2];
  for (int t : {1, 2}) {
    set_threads(t);
    r[t - 1][0] = matmul(a, b, false, true);
    r[t - 1][1] = matmul(x, w, false, true);
  }
  set_threads(saved);
  EXPECT_TRUE(testing::bitwise_equal(r[0][0], r[1][0]));
  EXPECT_TRUE(testing::bitwise_equal(r[0][1], r[1][1]));
}

TEST(Matmul, Errors) {
  Tensor a = Tensor::zeros({2, 3, 4});
  EXPECT_TFM_ERROR(matmul(a, Tensor::zeros({3, 4, 5})),
                   "matmul: batch dimensions differ, a f32 (2, 3, 4) vs b f32 (3, 4, 5)");
  EXPECT_TFM_ERROR(matmul(a, Tensor::zeros({4, 5})), "matmul: batch dimensions differ");
  EXPECT_TFM_ERROR(matmul(a, Tensor::zeros({2, 5, 6})),
                   "matmul: inner dimensions differ, a f32 (2, 3, 4) has K=4, b f32 (2, 5, 6) "
                   "has K=5");
  EXPECT_EQ(matmul(a, Tensor::zeros({2, 3, 5}), true, false).shape(), (Shape{2, 4, 5}));
  EXPECT_TFM_ERROR(matmul(a, Tensor::zeros({2, 3, 5}), true, true),
                   "a f32 (2, 3, 4) (transposed) has K=3, b f32 (2, 3, 5) (transposed) has K=5");
  EXPECT_TFM_ERROR(matmul(Tensor::zeros({4}), Tensor::zeros({4, 2})),
                   "matmul: operands must have at least 2 dimensions, got a f32 (4)");
  EXPECT_TFM_ERROR(matmul(Tensor::zeros({2, 2}), Tensor::zeros({2, 2}, DType::f64)),
                   "matmul: dtypes differ");
  EXPECT_TFM_ERROR(matmul(testing::random_ids({2, 2}, 5, 1), Tensor::zeros({2, 2})),
                   "matmul: a must be f32 or f64, got i32 (2, 2)");
}

}  // namespace
}  // namespace tfm
