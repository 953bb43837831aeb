// bf16 linear on tfm's own panels (the decode path of --precision bf16): against the exact
// product of the bf16-rounded operands in double with a bound from f32 accumulation, on shapes
// that hit every edge of the 8-row × 48-column tiles and of the k pairs; against the same sums
// added one by one in f32 in the documented order (bitwise); and the properties decoding relies
// on: a row's result depends neither on the other rows nor on the thread count, and it agrees
// with oneDNN's bf16 matmul up to summation order.
#include <cmath>
#include <cstring>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/cpu/packed_bf16_cpu.h"
#include "tfm/ops/linear_lowp.h"
#include "tfm/ops/shape.h"

namespace tfm {
namespace {

using testing::activate;
using testing::random_tensor;
using testing::round_bf16;

// act(bf16(x)·bf16(w)ᵀ + b) in double, and the bound of an f32 sum of k exact products:
// (k + 2) · 2^-24 · Σ|x̂ŵ| (each addition rounds once), doubled for slack, times the
// activation's Lipschitz constant 1.13.
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
        const double prod =
            static_cast<double>(round_bf16(xp[i * k + p])) * round_bf16(wp[j * k + p]);
        s += prod;
        mag += std::abs(prod);
      }
      ref[i * n + j] = activate(s, act);
      tol[i * n + j] = 1.13 * (k + 2) * std::ldexp(1.0, -23) * mag + 1e-6;
    }
}

Tensor run_packed(const Tensor& x, const cpu::PackedBf16& w, const Tensor& b, Activation act) {
  const int64_t m = x.size(0);
  Tensor y = Tensor::empty({m, w.n});
  cpu::packed_bf16_linear_forward(m, x.data<float>(), w, b.defined() ? b.data<float>() : nullptr,
                                  act, y.data<float>());
  return y;
}

TEST(PackedBf16Linear, MatchesTheRoundedProductOnOddShapes) {
  NoGradGuard no_grad;
  int checked = 0;
  for (int64_t m : {1, 3, 8, 9, 17, 64})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{1, 1},
                        {5, 7},
                        {47, 33},
                        {49, 31},
                        {100, 129},
                        {160, 256},
                        {97, 1001}})
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
          const Tensor y = run_packed(x, cpu::pack_bf16(n, k, w.data<float>()), b, act);
          std::vector<double> ref, tol;
          reference(x, w, b, act, m, n, k, ref, tol);
          const float* yp = y.data<float>();
          int bad = 0;
          for (int64_t i = 0; i < m * n; ++i) bad += !(std::abs(yp[i] - ref[i]) <= tol[i]);
          EXPECT_EQ(bad, 0);
          ++checked;
        }
  EXPECT_EQ(checked, 6 * 7 * 5 * 2);
}

// The documented order, one f32 addition at a time: for each k pair the odd k's product, then
// the even k's (vdpbf16ps' order), then the bias. Products of two bf16 values are exact in f32,
// so the only roundings are these additions and the result must agree bit for bit.
TEST(PackedBf16Linear, EqualsTheSameSumsAddedInOrder) {
  const int64_t m = 11, n = 61, k = 77;
  const Tensor x = random_tensor({m, k}, DType::f32, 41, -2.0, 2.0);
  const Tensor w = random_tensor({n, k}, DType::f32, 42);
  const Tensor b = random_tensor({n}, DType::f32, 43);
  for (Activation act : {Activation::none, Activation::relu}) {
    const Tensor y = run_packed(x, cpu::pack_bf16(n, k, w.data<float>()), b, act);
    const float* xp = x.data<float>();
    const float* wp = w.data<float>();
    int bad = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float acc = 0.f;
        for (int64_t q = 0; 2 * q < k; ++q) {
          if (2 * q + 1 < k) {
            const volatile float odd =
                round_bf16(xp[i * k + 2 * q + 1]) * round_bf16(wp[j * k + 2 * q + 1]);
            acc += odd;
          }
          const volatile float even = round_bf16(xp[i * k + 2 * q]) * round_bf16(wp[j * k + 2 * q]);
          acc += even;
        }
        float want = acc + b.data<float>()[j];
        if (act == Activation::relu) want = std::max(want, 0.f);
        bad += std::memcmp(&want, y.data<float>() + i * n + j, 4) != 0;
      }
    EXPECT_EQ(bad, 0) << "act " << int(act);
  }
}

// A row's sums run over k in one order whatever else is in the batch or how many threads run:
// the result of row i is bit for bit the same alone, in a batch, and on 1 or 2 threads.
TEST(PackedBf16Linear, RowsIndependentOfBatchAndThreads) {
  const int64_t m = 37, n = 200, k = 151;
  const Tensor x = random_tensor({m, k}, DType::f32, 21);
  const Tensor w = random_tensor({n, k}, DType::f32, 22);
  const Tensor b = random_tensor({n}, DType::f32, 23);
  const cpu::PackedBf16 packed = cpu::pack_bf16(n, k, w.data<float>());
  for (Activation act : {Activation::relu, Activation::gelu}) {
    const Tensor all1 = testing::with_threads(1, [&] { return run_packed(x, packed, b, act); });
    const Tensor all2 = testing::with_threads(2, [&] { return run_packed(x, packed, b, act); });
    EXPECT_TRUE(testing::bitwise_equal(all1, all2));
    for (int64_t i : {int64_t{0}, int64_t{9}, m - 1}) {
      const Tensor one = run_packed(narrow(x, 0, i, 1).contiguous(), packed, b, act);
      EXPECT_TRUE(testing::bitwise_equal(one, narrow(all1, 0, i, 1))) << "row " << i;
    }
  }
}

// linear_lowp holds one copy of a bf16 weight, tfm's panels, and runs them at every row count:
// bit for bit the kernel called directly, within the accumulation bound of the exact product.
TEST(PackedBf16Linear, LinearLowpRunsThePanelsAtEveryRowCount) {
  NoGradGuard no_grad;
  const int64_t n = 130, k = 300;
  const Tensor w = random_tensor({n, k}, DType::f32, 52);
  const Tensor b = random_tensor({n}, DType::f32, 53);
  const LowpWeight lw(w, ComputeType::bfloat16);
  const cpu::PackedWeights& packed = lw.packed();
  // 3 panels of 150 pairs: the only copy.
  EXPECT_EQ(packed.bf16.bytes, static_cast<size_t>(3 * 150 * 48 * 4));
  EXPECT_EQ(lw.bytes(), packed.bf16.bytes);
  for (int64_t m : {int64_t{1}, int64_t{17}, int64_t{128}, int64_t{129}, int64_t{600}}) {
    SCOPED_TRACE("m=" + std::to_string(m));
    const Tensor x = random_tensor({m, k}, DType::f32, 50 + m, -2.0, 2.0);
    const Tensor own = run_packed(x, packed.bf16, b, Activation::gelu);
    std::vector<double> ref, tol;
    reference(x, w, b, Activation::gelu, m, n, k, ref, tol);
    int bad = 0;
    for (int64_t i = 0; i < m * n; ++i) bad += !(std::abs(own.data<float>()[i] - ref[i]) <= tol[i]);
    EXPECT_EQ(bad, 0);
    EXPECT_TRUE(testing::bitwise_equal(linear_lowp(x, lw, b, Activation::gelu), own));
  }
}

TEST(PackedBf16Linear, PanelLayoutNaNAndErrors) {
  const int64_t n = 50, k = 3;
  const Tensor w = random_tensor({n, k}, DType::f32, 31);
  const cpu::PackedBf16 p = cpu::pack_bf16(n, k, w.data<float>());
  // Two panels of (2 pairs, 48 words): word [panel][q][j] = (w[j][2q], w[j][2q + 1]) as
  // (low, high) halves; zero past N and in the high half of the odd K's last pair.
  EXPECT_EQ(p.bytes, static_cast<size_t>(2 * 2 * cpu::kPackedBf16Panel) * sizeof(uint32_t));
  const uint32_t* d = p.data.get();
  const float* wp = w.data<float>();
  auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u >> 16;
  };
  for (int64_t j = 0; j < 2 * cpu::kPackedBf16Panel; ++j)
    for (int64_t q = 0; q < 2; ++q) {
      const uint32_t got = d[(j / 48) * 2 * 48 + q * 48 + j % 48];
      uint32_t want = 0;
      if (j < n) {
        want = bits(round_bf16(wp[j * k + 2 * q]));
        if (2 * q + 1 < k) want |= bits(round_bf16(wp[j * k + 2 * q + 1])) << 16;
      }
      EXPECT_EQ(got, want) << "channel " << j << " pair " << q;
    }
  // A NaN or inf in a row of x reaches that row's outputs only, as in fp32.
  Tensor x = random_tensor({3, k}, DType::f32, 32);
  x.data<float>()[1 * k + 2] = std::nanf("");
  x.data<float>()[2 * k + 0] = INFINITY;
  const Tensor y = run_packed(x, p, Tensor(), Activation::none);
  for (int64_t j = 0; j < n; ++j) {
    EXPECT_TRUE(std::isfinite(y.data<float>()[j]));
    EXPECT_TRUE(std::isnan(y.data<float>()[n + j]));
    EXPECT_FALSE(std::isfinite(y.data<float>()[2 * n + j]));
  }
  EXPECT_TFM_ERROR(cpu::pack_bf16(0, 4, nullptr), "pack_bf16: empty weight (0, 4)");
  EXPECT_TFM_ERROR(cpu::packed_bf16_linear_forward(1, x.data<float>(), cpu::PackedBf16{}, nullptr,
                                                   Activation::none, nullptr),
                   "weights not packed");
}

}  // namespace
}  // namespace tfm
