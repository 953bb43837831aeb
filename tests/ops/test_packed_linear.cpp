// fp32 linear on weights packed once (the decode path): against the exact product in double with
// a bound from f32 accumulation, on shapes that hit every edge of the tiles (AVX-512 8 × 48,
// AVX2 4 × 24); bit for bit against the FMA chain in k order, deep enough for the AVX2 walk's
// chunks;
// and the properties decoding relies on: a row's result depends neither on the other rows nor
// on the thread count, and the values equal the training path's to rounding.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/ops/cpu/packed_f32_cpu.h"
#include "tfm/ops/linear.h"
#include "tfm/ops/linear_lowp.h"
#include "tfm/ops/shape.h"

namespace tfm {
namespace {

using testing::random_tensor;

using testing::activate;

// act(x·wᵀ + b) in double, and the error bound of an f32 sum of k products: k · 2^-23 · Σ|x·w|
// (a loose form of the standard γ_k bound), with the activation's Lipschitz constant 1.13.
void reference(const Tensor& x, const Tensor& w, const Tensor& b, Activation act, int64_t m,
               int64_t n, int64_t k, std::vector<double>& ref, std::vector<double>& tol) {
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  ref.assign(m * n, 0.0);
  tol.assign(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = b.defined() ? b.data<float>()[j] : 0.0, mag = std::abs(s);
      for (int64_t p = 0; p < k; ++p) {
        s += static_cast<double>(xp[i * k + p]) * wp[j * k + p];
        mag += std::abs(static_cast<double>(xp[i * k + p]) * wp[j * k + p]);
      }
      ref[i * n + j] = activate(s, act);
      tol[i * n + j] = 1.13 * (k + 2) * std::ldexp(1.0, -23) * mag + 1e-6;
    }
}

TEST(PackedLinear, MatchesTheExactProductOnOddShapes) {
  NoGradGuard no_grad;
  int checked = 0;
  for (int64_t m : {1, 3, 8, 9, 16, 17, 64, 130})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{1, 1},
                        {5, 7},
                        {47, 33},
                        {48, 64},
                        {49, 16},
                        {100, 130},
                        {160, 256}})
      for (Activation act : {Activation::none, Activation::relu, Activation::gelu, Activation::silu,
                             Activation::gelu_tanh})
        for (bool bias : {false, true}) {
          SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) +
                       " k=" + std::to_string(k) + " act=" + std::to_string(int(act)) +
                       " bias=" + std::to_string(bias));
          const uint64_t seed = static_cast<uint64_t>(m * 1000 + n * 10 + k);
          const Tensor x = random_tensor({m, k}, DType::f32, seed, -2.0, 2.0);
          const Tensor w = random_tensor({n, k}, DType::f32, seed + 1);
          const Tensor b = bias ? random_tensor({n}, DType::f32, seed + 2) : Tensor();
          const LowpWeight packed(w, ComputeType::float32);
          EXPECT_EQ(packed.precision(), ComputeType::float32);
          EXPECT_EQ(packed.out_features(), n);
          EXPECT_EQ(packed.in_features(), k);
          const Tensor y = linear_lowp(x, packed, b, act);
          ASSERT_EQ(y.shape(), (Shape{m, n}));
          std::vector<double> ref, tol;
          reference(x, w, b, act, m, n, k, ref, tol);
          const float* yp = y.data<float>();
          int bad = 0;
          for (int64_t i = 0; i < m * n; ++i) bad += !(std::abs(yp[i] - ref[i]) <= tol[i]);
          EXPECT_EQ(bad, 0);
          ++checked;
        }
  EXPECT_EQ(checked, 8 * 7 * 5 * 2);
}

// Every output is one FMA chain over k in order, then the bias, then ReLU: the AVX2 walk cuts a
// deep panel into chunks of 512 steps and carries the partial sums through y, which must not
// change a bit (k = 1100: chunks of 512, 512, 76; k = 2048: four whole ones); the AVX-512 tile
// sums the same chain in one pass.
TEST(PackedLinear, EqualsTheFmaChainInOrderOnDeepWeights) {
  for (int64_t k : {1100, 2048})
    for (int64_t m : {1, 5, 64}) {
      SCOPED_TRACE("k=" + std::to_string(k) + " m=" + std::to_string(m));
      const int64_t n = 100;  // two whole panels and one of 4 columns
      const Tensor x = random_tensor({m, k}, DType::f32, 31 + k + m, -2.0, 2.0);
      const Tensor w = random_tensor({n, k}, DType::f32, 32 + k);
      const Tensor b = random_tensor({n}, DType::f32, 33 + k);
      const cpu::PackedF32 packed = cpu::pack_f32(n, k, w.data<float>());
      const float *xp = x.data<float>(), *wp = w.data<float>();
      for (Activation act : {Activation::none, Activation::relu}) {
        std::vector<float> want(static_cast<size_t>(m * n));
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            float s = 0.f;
            for (int64_t p = 0; p < k; ++p) s = std::fma(xp[i * k + p], wp[j * k + p], s);
            s += b.data<float>()[j];
            want[static_cast<size_t>(i * n + j)] = act == Activation::relu ? std::max(s, 0.f) : s;
          }
        // The AVX2 walk (chunks) on every machine, and this machine's own level.
        for (CpuIsa isa : {CpuIsa::avx2, cpu_isa()}) {
          Tensor y = Tensor::empty({m, n});
          cpu::packed_f32_linear_forward(m, xp, packed, b.data<float>(), act, y.data<float>(), isa);
          EXPECT_EQ(std::memcmp(want.data(), y.data<float>(), want.size() * sizeof(float)), 0)
              << cpu_isa_name(isa);
        }
      }
    }
}

TEST(PackedLinear, ClosesToTheTrainingPathAndKeepsLeadingAxes) {
  NoGradGuard no_grad;
  const Tensor x = random_tensor({2, 5, 96}, DType::f32, 11);
  const Tensor w = random_tensor({72, 96}, DType::f32, 12);
  const Tensor b = random_tensor({72}, DType::f32, 13);
  const Tensor y = linear_lowp(x, LowpWeight(w, ComputeType::float32), b, Activation::relu);
  ASSERT_EQ(y.shape(), (Shape{2, 5, 72}));
  const Tensor plain = linear(x, w, b, Activation::relu);
  EXPECT_GT(testing::max_abs_diff(plain, Tensor::zeros(plain.shape())), 1.0);  // not all zero
  EXPECT_LT(testing::max_abs_diff(y, plain), 1e-5);
}

// A row's sums run over k in one order whatever else is in the batch or how many threads run:
// the result of row i is bit for bit the same alone, in a batch, and on 1 or 2 threads.
TEST(PackedLinear, RowsIndependentOfBatchAndThreads) {
  const int64_t m = 37, n = 200, k = 150;
  const Tensor x = random_tensor({m, k}, DType::f32, 21);
  const Tensor w = random_tensor({n, k}, DType::f32, 22);
  const Tensor b = random_tensor({n}, DType::f32, 23);
  const cpu::PackedF32 packed = cpu::pack_f32(n, k, w.data<float>());
  Tensor all1 = Tensor::empty({m, n}), all2 = Tensor::empty({m, n});
  testing::with_threads(1, [&] {
    cpu::packed_f32_linear_forward(m, x.data<float>(), packed, b.data<float>(), Activation::relu,
                                   all1.data<float>());
  });
  testing::with_threads(2, [&] {
    cpu::packed_f32_linear_forward(m, x.data<float>(), packed, b.data<float>(), Activation::relu,
                                   all2.data<float>());
  });
  EXPECT_TRUE(testing::bitwise_equal(all1, all2));
  for (int64_t i : {int64_t{0}, int64_t{9}, m - 1}) {
    Tensor one = Tensor::empty({1, n});
    cpu::packed_f32_linear_forward(1, x.data<float>() + i * k, packed, b.data<float>(),
                                   Activation::relu, one.data<float>());
    EXPECT_TRUE(testing::bitwise_equal(one, narrow(all1, 0, i, 1))) << "row " << i;
  }
}

TEST(PackedLinear, PanelLayoutAndErrors) {
  const int64_t n = 50, k = 3;
  const Tensor w = random_tensor({n, k}, DType::f32, 31);
  const cpu::PackedF32 p = cpu::pack_f32(n, k, w.data<float>());
  // Two panels of (K, 48): channel j of panel q at [q][p][j], zeros past N.
  EXPECT_EQ(p.bytes, static_cast<size_t>(2 * k * cpu::kPackedF32Panel) * sizeof(float));
  const float* d = p.data.get();
  const float* wp = w.data<float>();
  for (int64_t j = 0; j < 2 * cpu::kPackedF32Panel; ++j)
    for (int64_t q = 0; q < k; ++q) {
      const float got = d[(j / 48) * k * 48 + q * 48 + j % 48];
      EXPECT_EQ(got, j < n ? wp[j * k + q] : 0.f) << "channel " << j << " k " << q;
    }
  EXPECT_NE(testing::error_of([] { cpu::pack_f32(0, 4, nullptr); }).find("empty weight"),
            std::string::npos);
  const Tensor x = random_tensor({2, 4}, DType::f32, 32);
  EXPECT_NE(testing::error_of([&] {
              linear_lowp(x, LowpWeight(w, ComputeType::float32));
            }).find("does not match in_features 3"),
            std::string::npos);
}

}  // namespace
}  // namespace tfm
