#include <cmath>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/activation.h"
#include "tfm/ops/cpu/linear_cpu.h"
#include "tfm/ops/cpu/primitives.h"
#include "tfm/ops/elementwise.h"
#include "tfm/ops/linear.h"
#include "tfm/ops/matmul.h"

namespace tfm {
namespace {

using testing::gradcheck;
using testing::random_tensor;

const Activation kActs[] = {Activation::none, Activation::relu, Activation::gelu, Activation::silu,
                            Activation::gelu_tanh};

// act(x·wᵀ + b) by plain loops in double with std::erf: the definition, sharing no code with
// the op. Returns f64 of shape (..., out).
Tensor reference_linear(const Tensor& x, const Tensor& w, const Tensor& b, Activation act) {
  const Tensor x64 = x.to(DType::f64).contiguous(), w64 = w.to(DType::f64).contiguous();
  const int64_t out = w.size(0), in = w.size(1), rows = x.numel() / std::max<int64_t>(in, 1);
  Shape shape = x.shape();
  shape.back() = out;
  std::vector<double> y(shape_numel(shape));
  std::vector<double> bv =
      b.defined() ? b.to(DType::f64).to_vector<double>() : std::vector<double>(out, 0.0);
  const double* px = x64.data<double>();
  const double* pw = w64.data<double>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < out; ++j) {
      double z = bv[j];
      for (int64_t p = 0; p < in; ++p) z += px[i * in + p] * pw[j * in + p];
      y[i * out + j] = testing::activate(z, act);
    }
  return Tensor::from_vector<double>(shape, y);
}

// (rows, n) with b in every row: the broadcast the composed reference needs.
Tensor broadcast_rows(const Tensor& b, int64_t rows) {
  std::vector<float> v;
  const std::vector<float> bv = b.to_vector<float>();
  for (int64_t i = 0; i < rows; ++i) v.insert(v.end(), bv.begin(), bv.end());
  return Tensor::from_vector<float>({rows, b.size(0)}, v);
}

using testing::with_threads;

TEST(Linear, ForwardMatchesDefinition) {
  struct Case {
    Shape x;
    int64_t out;
  };
  const Case cases[] = {{{1, 1}, 1}, {{5, 7}, 3}, {{2, 3, 4}, 5}, {{4}, 6}, {{1, 9, 16}, 33}};
  uint64_t seed = 1;
  for (const Case& c : cases)
    for (Activation act : kActs)
      for (bool with_bias : {true, false}) {
        SCOPED_TRACE(::testing::Message() << "x " << shape_str(c.x) << " out " << c.out << " "
                                          << activation_name(act) << " bias " << with_bias);
        const int64_t in = c.x.back();
        Tensor x = random_tensor(c.x, DType::f64, seed++, -2, 2);
        Tensor w = random_tensor({c.out, in}, DType::f64, seed++);
        Tensor b = with_bias ? random_tensor({c.out}, DType::f64, seed++) : Tensor();
        Tensor ref = reference_linear(x, w, b, act);
        EXPECT_TRUE(testing::all_close(linear(x, w, b, act), ref, 1e-13, 1e-14));
        Tensor x32 = x.to(DType::f32), w32 = w.to(DType::f32);
        Tensor b32 = with_bias ? b.to(DType::f32) : Tensor();
        Tensor y32 = linear(x32, w32, b32, act);
        EXPECT_EQ(y32.dtype(), DType::f32);
        EXPECT_TRUE(testing::all_close(y32, ref, 1e-5, 1e-6));
      }
}

TEST(Linear, FusedEqualsComposedFromElementaryOps) {
  // The fused epilogue (bias and activation inside the oneDNN matmul) against matmul + add +
  // activation as separate ops. Both sum each dot product in f32, maybe in different orders.
  Tensor x = random_tensor({37, 64}, DType::f32, 20);
  Tensor w = random_tensor({45, 64}, DType::f32, 21);
  Tensor b = random_tensor({45}, DType::f32, 22);
  Tensor z = add(matmul(x, w, false, true), broadcast_rows(b, 37));
  NoGradGuard no_grad;  // inference: the fully fused path, gelu included
  EXPECT_TRUE(testing::all_close(linear(x, w, b), z, 1e-6, 1e-6));
  EXPECT_TRUE(testing::all_close(linear(x, w, b, Activation::relu), relu(z), 1e-6, 1e-6));
  // oneDNN's gelu_erf and tfm's f32 gelu use the same erf approximation, different exps.
  EXPECT_TRUE(testing::all_close(linear(x, w, b, Activation::gelu), gelu(z), 1e-5, 1e-6));
}

TEST(Linear, F32AgreesWithF64OnLargerShapes) {
  Tensor x = random_tensor({67, 129}, DType::f64, 30);
  Tensor w = random_tensor({255, 129}, DType::f64, 31);
  Tensor b = random_tensor({255}, DType::f64, 32);
  for (Activation act : kActs) {
    SCOPED_TRACE(activation_name(act));
    Tensor y64 = linear(x, w, b, act);
    Tensor y32 = linear(x.to(DType::f32), w.to(DType::f32), b.to(DType::f32), act);
    EXPECT_TRUE(testing::all_close(y32, y64, 1e-5, 2e-5));
  }
}

TEST(Linear, BothF32PathsAgree) {
  // The fused primitive and sgemm + epilogue pass, each against the definition: K = 300 spans
  // several GEMM K-blocks; size-1 dimensions test the primitive's stride handling (a (K, 1)
  // weight view with strides (1, K)).
  struct Case {
    int64_t m, n, k;
  };
  for (Case c : {Case{70, 130, 300}, Case{20, 1, 1}, Case{20, 1, 7}, Case{20, 5, 1}, Case{1, 9, 4},
                 Case{9, 9, 9}})
    for (Activation act : kActs) {
      SCOPED_TRACE(::testing::Message()
                   << c.m << "x" << c.n << "x" << c.k << " " << activation_name(act));
      Tensor x = random_tensor({c.m, c.k}, DType::f32, 40);
      Tensor w = random_tensor({c.n, c.k}, DType::f32, 41);
      Tensor b = random_tensor({c.n}, DType::f32, 42);
      Tensor ref = reference_linear(x, w, b, act);
      for (auto path : {cpu::LinearPath::primitive, cpu::LinearPath::sgemm}) {
        Tensor y = Tensor::empty({c.m, c.n});
        cpu::linear_forward<float>(c.m, c.n, c.k, x.data<float>(), w.data<float>(), b.data<float>(),
                                   act, y.data<float>(), path);
        // |z| reaches ~10 after 300 terms: f32 summation-order differences of a few 1e-6.
        EXPECT_TRUE(testing::all_close(y, ref, 1e-5, 1e-5))
            << (path == cpu::LinearPath::sgemm ? "sgemm" : "primitive");
      }
    }
}

TEST(Linear, GradModeGeluMatchesFusedInference) {
  // With grad on, gelu runs after the GEMM (its input is kept for the backward); without, inside
  // it. The two differ only by the exp inside the erf approximation.
  Tensor x = random_tensor({2, 11, 40}, DType::f32, 50, -3, 3);
  Tensor w = random_tensor({24, 40}, DType::f32, 51).set_requires_grad(true);
  Tensor b = random_tensor({24}, DType::f32, 52);
  Tensor y_train = linear(x, w, b, Activation::gelu);
  EXPECT_TRUE(y_train.requires_grad());
  autograd::clear_tape();
  Tensor y_infer;
  {
    NoGradGuard no_grad;
    y_infer = linear(x, w, b, Activation::gelu);
  }
  EXPECT_FALSE(y_infer.requires_grad());
  EXPECT_TRUE(testing::all_close(y_train, y_infer, 1e-5, 1e-6));
}

TEST(Linear, Gradcheck) {
  struct Case {
    Shape x;
    int64_t out;
  };
  const Case cases[] = {{{1, 1}, 1}, {{3, 5}, 4}, {{2, 3, 7}, 5}, {{4}, 3}, {{1, 1, 6}, 2}};
  uint64_t seed = 60;
  for (const Case& c : cases)
    for (Activation act : kActs) {
      SCOPED_TRACE(::testing::Message()
                   << "x " << shape_str(c.x) << " out " << c.out << " " << activation_name(act));
      Tensor x = random_tensor(c.x, DType::f64, seed++, -2, 2).set_requires_grad(true);
      Tensor w = random_tensor({c.out, c.x.back()}, DType::f64, seed++).set_requires_grad(true);
      Tensor b = random_tensor({c.out}, DType::f64, seed++).set_requires_grad(true);
      EXPECT_TRUE(
          gradcheck([act](auto& in) { return linear(in[0], in[1], in[2], act); }, {x, w, b}));
      EXPECT_TRUE(
          gradcheck([act](auto& in) { return linear(in[0], in[1], Tensor(), act); }, {x, w}));
      // Downstream of another op, so the incoming gradient is not the gradcheck weighting.
      EXPECT_TRUE(gradcheck(
          [act](auto& in) {
            Tensor y = linear(in[0], in[1], in[2], act);
            return mul(y, y);
          },
          {x, w, b}));
    }
}

TEST(Linear, GradientsOnlyForInputsThatNeedThem) {
  for (Activation act : kActs) {
    Tensor x = random_tensor({6, 5}, DType::f64, 70);
    Tensor w = random_tensor({4, 5}, DType::f64, 71).set_requires_grad(true);
    Tensor b = random_tensor({4}, DType::f64, 72);
    // Only the weight: x is not saved for dX, bias gets no gradient.
    EXPECT_TRUE(gradcheck([act](auto& in) { return linear(in[0], in[1], in[2], act); }, {x, w, b}));
    EXPECT_FALSE(x.grad().defined());
    EXPECT_FALSE(b.grad().defined());
    // Only x (a frozen layer).
    Tensor x2 = x.clone().set_requires_grad(true);
    Tensor w2 = w.detach().clone();
    EXPECT_TRUE(
        gradcheck([act](auto& in) { return linear(in[0], in[1], in[2], act); }, {x2, w2, b}));
    EXPECT_FALSE(w2.grad().defined());
    // Only the bias.
    Tensor b3 = b.clone().set_requires_grad(true);
    EXPECT_TRUE(
        gradcheck([act](auto& in) { return linear(in[0], in[1], in[2], act); }, {x, w2, b3}));
  }
}

TEST(Linear, F32BackwardAgreesWithF64) {
  Tensor x = random_tensor({3, 41, 96}, DType::f64, 80);
  Tensor w = random_tensor({72, 96}, DType::f64, 81);
  Tensor b = random_tensor({72}, DType::f64, 82);
  Tensor gy = random_tensor({3, 41, 72}, DType::f64, 83);
  for (Activation act : kActs) {
    SCOPED_TRACE(activation_name(act));
    Tensor g[2][3];
    for (int f = 0; f < 2; ++f) {
      const DType dt = f == 0 ? DType::f32 : DType::f64;
      Tensor xi = x.to(dt).set_requires_grad(true), wi = w.to(dt).set_requires_grad(true);
      Tensor bi = b.to(dt).set_requires_grad(true);
      autograd::backward(linear(xi, wi, bi, act), gy.to(dt));
      g[f][0] = xi.grad();
      g[f][1] = wi.grad();
      g[f][2] = bi.grad();
    }
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(testing::all_close(g[0][k], g[1][k], 1e-4, 1e-4)) << k;
  }
}

TEST(Linear, BiasGradientIsColumnSumOfIncomingGradient) {
  // With no activation db = Σ_rows dY exactly; checked against a sum in long double.
  Tensor x = random_tensor({513, 3}, DType::f32, 90);
  Tensor w = random_tensor({300, 3}, DType::f32, 91);
  Tensor b = random_tensor({300}, DType::f32, 92).set_requires_grad(true);
  Tensor gy = random_tensor({513, 300}, DType::f32, 93);
  autograd::backward(linear(x, w, b), gy);
  const std::vector<float> g = gy.to_vector<float>(), db = b.grad().to_vector<float>();
  for (int64_t j = 0; j < 300; ++j) {
    long double s = 0;
    for (int64_t i = 0; i < 513; ++i) s += g[i * 300 + j];
    ASSERT_EQ(db[j], static_cast<float>(s)) << "column " << j;  // double accumulation: exact
  }
}

// Thread-count determinism on this build (oneDNN 2.6, OpenMP), measured for f32 over a grid of
// shapes (M 1..256, N 1..2048, K 64..32768, all four transposes):
//  - bitwise identical for 1 and 2 threads: the fused matmul primitive (every shape tried; it
//    splits only rows and columns of y, so each dot product is summed in one order); db (tfm's
//    column sums split by column); dnnl_sgemm whenever M >= 2 and N >= 2, apart from the next
//    point.
//  - NOT bitwise identical: dnnl_sgemm when it also splits the reduction dimension K across
//    threads and adds the partial sums: GEMV-like calls (M = 1 or N = 1) with K >= 512, and
//    x·Wᵀ with 16 <= M <= 256 and K >= 2048. linear never takes sgemm for that forward (it uses
//    sgemm only for M <= 8), but its backward GEMMs do: dX = dZ·W for a single row (M = 1)
//    and dW = dZᵀ·X when in_features or out_features is 1. Those differ by f32 rounding only.
// At a fixed thread count everything is run-to-run reproducible (static work split).
struct DetCase {
  int64_t m, n, k;
};

std::vector<Tensor> forward_and_grads(const Tensor& x, const Tensor& w, const Tensor& b,
                                      const Tensor& gy, Activation act) {
  Tensor xr = x.clone().set_requires_grad(true), wr = w.clone().set_requires_grad(true);
  Tensor br = b.clone().set_requires_grad(true);
  Tensor y;
  {
    NoGradGuard no_grad;  // the fully fused inference path
    y = linear(x, w, b, act);
  }
  autograd::backward(linear(xr, wr, br, act), gy);
  return {y, xr.grad(), wr.grad(), br.grad()};
}

TEST(Linear, OneAndTwoThreadsGiveIdenticalBits) {
  // Includes M <= 8 (sgemm path), 16 <= M <= 256 with K = 2048 (where sgemm would split K) and
  // large M; all with M, N, K >= 2.
  const DetCase cases[] = {{2048, 256, 64}, {32, 2048, 512}, {64, 512, 2048},
                           {8, 2048, 512},  {2, 512, 2048},  {77, 130, 300}};
  for (DetCase c : cases)
    for (Activation act : kActs) {
      SCOPED_TRACE(::testing::Message()
                   << c.m << "x" << c.n << "x" << c.k << " " << activation_name(act));
      Tensor x = random_tensor({c.m, c.k}, DType::f32, 100);
      Tensor w = random_tensor({c.n, c.k}, DType::f32, 101);
      Tensor b = random_tensor({c.n}, DType::f32, 102);
      Tensor gy = random_tensor({c.m, c.n}, DType::f32, 103);
      auto run = [&] { return forward_and_grads(x, w, b, gy, act); };
      auto one = with_threads(1, run), two = with_threads(2, run);
      const char* what[] = {"y", "dX", "dW", "db"};
      for (int i = 0; i < 4; ++i) EXPECT_TRUE(testing::bitwise_equal(one[i], two[i])) << what[i];
    }
}

TEST(Linear, SgemmReductionSplitsAgreeToRoundingAndRepeatExactly) {
  // The shapes listed above where dnnl_sgemm may split K: single-row dX, in_features = 1 and
  // out_features = 1 for dW, and the forward forced onto the sgemm path with M = 32, K = 2048.
  const DetCase cases[] = {{1, 512, 2048}, {256, 2048, 1}, {256, 1, 2048}};
  for (DetCase c : cases) {
    SCOPED_TRACE(::testing::Message() << c.m << "x" << c.n << "x" << c.k);
    Tensor x = random_tensor({c.m, c.k}, DType::f32, 104);
    Tensor w = random_tensor({c.n, c.k}, DType::f32, 105);
    Tensor b = random_tensor({c.n}, DType::f32, 106);
    Tensor gy = random_tensor({c.m, c.n}, DType::f32, 107);
    auto run = [&] { return forward_and_grads(x, w, b, gy, Activation::relu); };
    auto one = with_threads(1, run), two = with_threads(2, run), again = with_threads(2, run);
    for (int i = 0; i < 4; ++i) {
      EXPECT_TRUE(testing::all_close(one[i], two[i], 1e-5, 1e-5)) << i;
      EXPECT_TRUE(testing::bitwise_equal(two[i], again[i])) << i;
    }
  }
  const int64_t m = 32, n = 512, k = 2048;
  Tensor x = random_tensor({m, k}, DType::f32, 108), w = random_tensor({n, k}, DType::f32, 109);
  auto sgemm = [&] {
    Tensor y = Tensor::empty({m, n});
    cpu::linear_forward<float>(m, n, k, x.data<float>(), w.data<float>(), nullptr, Activation::none,
                               y.data<float>(), cpu::LinearPath::sgemm);
    return y;
  };
  Tensor one = with_threads(1, sgemm), two = with_threads(2, sgemm);
  EXPECT_TRUE(testing::all_close(one, two, 1e-5, 1e-5));
  EXPECT_TRUE(testing::bitwise_equal(two, with_threads(2, sgemm)));
}

TEST(Linear, ColumnSumsIndependentOfThreadCount) {
  Tensor a = random_tensor({1000, 777}, DType::f32, 110);
  auto sums = [&] {
    Tensor out = Tensor::empty({777});
    cpu::column_sums<float>(1000, 777, a.data<float>(), out.data<float>());
    return out;
  };
  EXPECT_TRUE(testing::bitwise_equal(with_threads(1, sums), with_threads(2, sums)));
}

TEST(Linear, PrimitiveCacheReusesAndStaysBounded) {
  // Row counts above the small-M threshold, where linear takes the primitive path.
  Tensor x = random_tensor({2, 20, 8}, DType::f32, 120), w = random_tensor({5, 8}, DType::f32, 121);
  NoGradGuard no_grad;
  cpu::clear_matmul_primitive_cache();
  const auto s0 = cpu::matmul_primitive_cache_stats();
  Tensor y1 = linear(x, w, Tensor(), Activation::relu);
  Tensor y2 = linear(x, w, Tensor(), Activation::relu);
  const auto s1 = cpu::matmul_primitive_cache_stats();
  EXPECT_EQ(s1.entries, 1u);
  EXPECT_EQ(s1.misses - s0.misses, 1u);
  EXPECT_EQ(s1.hits - s0.hits, 1u);
  EXPECT_TRUE(testing::bitwise_equal(y1, y2));
  // A different activation is a different primitive, not a wrong hit.
  Tensor y3 = linear(x, w, Tensor(), Activation::none);
  EXPECT_EQ(cpu::matmul_primitive_cache_stats().entries, 2u);
  EXPECT_FALSE(testing::bitwise_equal(y1, y3));
  // More distinct shapes than the capacity: old ones are evicted, results stay right.
  EXPECT_EQ(s1.capacity, 256u);
  cpu::set_matmul_primitive_cache_capacity(6);
  EXPECT_EQ(cpu::matmul_primitive_cache_stats().entries, 2u);
  for (int64_t m = 17; m <= 57; m += 3) {
    Tensor xm = random_tensor({m, 8}, DType::f32, m);
    Tensor ym = linear(xm, w, Tensor(), Activation::relu);
    ASSERT_TRUE(
        testing::all_close(ym, reference_linear(xm, w, Tensor(), Activation::relu), 1e-5, 1e-6));
  }
  EXPECT_EQ(cpu::matmul_primitive_cache_stats().entries, 6u);
  // The thread count is part of the key: oneDNN fixes its work split at creation.
  const size_t misses = cpu::matmul_primitive_cache_stats().misses;
  with_threads(1, [&] { return linear(x, w); });
  with_threads(2, [&] { return linear(x, w); });
  EXPECT_EQ(cpu::matmul_primitive_cache_stats().misses, misses + 2);
  cpu::set_matmul_primitive_cache_capacity(1);
  EXPECT_EQ(cpu::matmul_primitive_cache_stats().entries, 1u);
  cpu::set_matmul_primitive_cache_capacity(s1.capacity);
}

TEST(Linear, EmptyAndDegenerateSizes) {
  Tensor w = random_tensor({4, 3}, DType::f32, 130);
  Tensor b = random_tensor({4}, DType::f32, 131);
  EXPECT_EQ(linear(Tensor::zeros({0, 3}), w, b).shape(), (Shape{0, 4}));
  EXPECT_EQ(linear(Tensor::zeros({2, 0, 3}), w, b).shape(), (Shape{2, 0, 4}));
  // in_features = 0: an empty dot product, so y = act(b).
  Tensor y = linear(Tensor::zeros({2, 0}), Tensor::zeros({4, 0}), b, Activation::relu);
  EXPECT_TRUE(testing::bitwise_equal(y, relu(broadcast_rows(b, 2))));
}

TEST(Linear, NonContiguousInput) {
  Tensor x = random_tensor({6, 5}, DType::f32, 140);
  Tensor w = random_tensor({3, 6}, DType::f32, 141);
  Tensor xt = x.transpose(0, 1);  // (5, 6) view
  EXPECT_TRUE(testing::bitwise_equal(linear(xt, w), linear(xt.contiguous(), w)));
}

TEST(Linear, Errors) {
  Tensor x = Tensor::zeros({4, 7});
  Tensor w = Tensor::zeros({8, 5});
  EXPECT_TFM_ERROR(linear(x, w),
                   "linear: input f32 (4, 7) does not match weight f32 (8, 5) in_features (5)");
  EXPECT_TFM_ERROR(linear(Tensor::zeros({4, 5}), w, Tensor::zeros({5})),
                   "linear: bias f32 (5) does not match weight f32 (8, 5) out_features (8)");
  EXPECT_TFM_ERROR(linear(Tensor::zeros({4, 5}), w, Tensor::zeros({1, 8})),
                   "linear: bias f32 (1, 8) does not match");
  EXPECT_TFM_ERROR(linear(Tensor::zeros({4, 5}, DType::f64), w),
                   "linear: dtypes differ, f64 (4, 5) vs f32 (8, 5)");
  EXPECT_TFM_ERROR(linear(Tensor::zeros({4, 5}), w, Tensor::zeros({8}, DType::f64)),
                   "linear: dtypes differ, f64 (8) vs f32 (8, 5)");
  EXPECT_TFM_ERROR(linear(testing::random_ids({4, 5}, 10, 1), w),
                   "linear: x must be f32 or f64, got i32 (4, 5)");
  EXPECT_TFM_ERROR(linear(Tensor::zeros({4, 5}), Tensor::zeros({8, 5}, DType::i32)),
                   "linear: weight must be f32 or f64, got i32 (8, 5)");
  EXPECT_TFM_ERROR(linear(Tensor::zeros({4, 5}), Tensor::zeros({5})),
                   "linear: weight must be (out_features, in_features), got f32 (5)");
  EXPECT_TFM_ERROR(linear(Tensor(), w), "linear: x is undefined");
}

}  // namespace
}  // namespace tfm
