// bf16 and int8 linear against references that share no code with the op: the exact product in
// double with error bounds derived from each format, and (bf16) the product of the rounded
// operands, which the op must match to f32 accumulation accuracy.
#include <cmath>
#include <cstring>

#include "support/test_util.h"
#include "tfm/core/cpu_isa.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/embedding.h"
#include "tfm/ops/linear.h"
#include "tfm/ops/linear_lowp.h"

namespace tfm {
namespace {

using testing::activate;
using testing::random_tensor;
using testing::round_bf16;

const Activation kActs[] = {Activation::none, Activation::relu, Activation::gelu, Activation::silu,
                            Activation::gelu_tanh};

// Both relu and gelu move outputs by at most ~1.13 × the change of their input.
constexpr double kActLipschitz = 1.13;

struct Problem {
  int64_t m, n, k;
  Tensor x, w, b;  // x (m, k), w (n, k), b (n) or undefined
};

Problem make_problem(int64_t m, int64_t n, int64_t k, bool bias, uint64_t seed) {
  Problem p{m,
            n,
            k,
            random_tensor({m, k}, DType::f32, seed, -2.0, 2.0),
            random_tensor({n, k}, DType::f32, seed + 1, -0.1, 0.1),
            Tensor()};
  if (bias) p.b = random_tensor({n}, DType::f32, seed + 2, -0.5, 0.5);
  return p;
}

// Σ_k f(x[i, k], w[j, k]) for every (i, j), in double.
template <typename F>
std::vector<double> pairwise(const Problem& p, F&& f) {
  const float* x = p.x.data<float>();
  const float* w = p.w.data<float>();
  std::vector<double> out(p.m * p.n, 0.0);
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double s = 0;
      for (int64_t q = 0; q < p.k; ++q) s += f(x[i * p.k + q], w[j * p.k + q], i, j);
      out[i * p.n + j] = s;
    }
  return out;
}

double bias_at(const Problem& p, int64_t j) {
  return p.b.defined() ? p.b.data<float>()[j] : 0.0;
}

// bf16: each operand is off by at most 2^-9 relatively (round to nearest), so each product by
// 2^-8 + 2^-18; f32 accumulation adds well under 1e-5 of Σ|x||w| for these K.
// `sequences`: the weight packed for whole sequences (oneDNN's bf16 kernel where the CPU has
// AVX512-BF16, tfm's panels elsewhere) is held to the same bounds.
TEST(LinearLowp, Bf16WithinTheFormatsBoundAndEqualToTheRoundedProduct) {
  for (bool sequences : {false, true})
    for (int64_t m : {1, 3, 32, 128, 700}) {
      for (bool bias : {false, true}) {
        for (Activation act : kActs) {
          SCOPED_TRACE(::testing::Message() << "sequences=" << sequences << " m=" << m
                                            << " bias=" << bias << " act=" << activation_name(act));
          const Problem p = make_problem(m, 96, 320, bias, 100 + m);
          const LowpWeight lw(p.w, ComputeType::bfloat16, sequences);
          if (sequences && cpu_has_bf16_dot())
            ASSERT_NE(lw.packed().onednn.desc, nullptr) << "not packed for oneDNN's kernel";
          const Tensor y = linear_lowp(p.x, lw, p.b, act);
          ASSERT_EQ(y.shape(), (Shape{m, 96}));
          const auto exact =
              pairwise(p, [](float a, float b, int64_t, int64_t) { return double(a) * b; });
          const auto rounded = pairwise(
              p, [](float a, float b, int64_t, int64_t) { return round_bf16(a) * round_bf16(b); });
          const auto mag = pairwise(
              p, [](float a, float b, int64_t, int64_t) { return std::fabs(double(a) * b); });
          const float* py = y.data<float>();
          double max_err = 0, worst_ratio = 0;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < 96; ++j) {
              const int64_t e = i * 96 + j;
              const double want = activate(exact[e] + bias_at(p, j), act);
              const double bound = kActLipschitz * (std::ldexp(1.0, -8) + 1e-5) * mag[e] + 1e-6;
              max_err = std::max(max_err, std::fabs(py[e] - want));
              worst_ratio = std::max(worst_ratio, std::fabs(py[e] - want) / bound);
              const double from_rounded = activate(rounded[e] + bias_at(p, j), act);
              ASSERT_NEAR(py[e], from_rounded, 1e-5 * kActLipschitz * mag[e] + 1e-6)
                  << "(" << i << ", " << j << ")";
            }
          EXPECT_LE(worst_ratio, 1.0);
          // The operands really were rounded (an f32 GEMM would be ~1e-6 off here).
          EXPECT_GT(max_err, 1e-4);
        }
      }
    }
}

// int8: x = sx (qx − zx) + ex with |ex| ≤ sx/2 (per row, sx = (max(0, max x) − min(0, min x)) /
// 255) and w = sw qw + ew with |ew| ≤ sw/2 (per output channel, sw = max|w| / 127), so
// |xw − x̂ŵ| ≤ |w| sx/2 + |x| sw/2 + sx sw/4 per product.
TEST(LinearLowp, Int8WithinTheBoundFromItsScales) {
  for (int64_t m : {1, 5, 32, 128, 600}) {
    for (bool bias : {false, true}) {
      for (Activation act : kActs) {
        SCOPED_TRACE(::testing::Message()
                     << "m=" << m << " bias=" << bias << " act=" << activation_name(act));
        Problem p = make_problem(m, 80, 256, bias, 200 + m);
        // Rows of different ranges, one all non-negative (a ReLU output) and one all zero.
        float* x = p.x.data<float>();
        for (int64_t i = 0; i < m; ++i)
          for (int64_t q = 0; q < p.k; ++q) {
            float& v = x[i * p.k + q];
            if (i % 4 == 1) v = std::fabs(v);
            if (i % 4 == 2) v *= 0.01f;
            if (i % 7 == 6) v = 0.f;
          }
        const LowpWeight lw(p.w, ComputeType::int8);
        ASSERT_EQ(lw.scales().size(), 80u);
        std::vector<double> sx(m);
        for (int64_t i = 0; i < m; ++i) {
          double lo = 0, hi = 0;
          for (int64_t q = 0; q < p.k; ++q) {
            lo = std::min<double>(lo, x[i * p.k + q]);
            hi = std::max<double>(hi, x[i * p.k + q]);
          }
          sx[i] = (hi - lo) / 255;
        }
        const float* w = p.w.data<float>();
        for (int64_t j = 0; j < 80; ++j) {
          double amax = 0;
          for (int64_t q = 0; q < p.k; ++q)
            amax = std::max<double>(amax, std::fabs(w[j * p.k + q]));
          ASSERT_NEAR(lw.scales()[j], amax / 127, 1e-7 * amax);
        }
        const Tensor y = linear_lowp(p.x, lw, p.b, act);
        const auto exact =
            pairwise(p, [](float a, float b, int64_t, int64_t) { return double(a) * b; });
        const auto bound = pairwise(p, [&](float a, float b, int64_t i, int64_t j) {
          const double sw = lw.scales()[j];
          return std::fabs(b) * sx[i] / 2 + std::fabs(a) * sw / 2 + sx[i] * sw / 4 +
                 1e-6 * std::fabs(double(a) * b);
        });
        const float* py = y.data<float>();
        double sum_err = 0, sum_bound = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < 80; ++j) {
            const int64_t e = i * 80 + j;
            const double want = activate(exact[e] + bias_at(p, j), act);
            const double b = kActLipschitz * bound[e] + 1e-6;
            const double err = std::fabs(py[e] - want);
            ASSERT_LE(err, b) << "(" << i << ", " << j << ")";
            if (i % 7 == 6) {
              ASSERT_NEAR(py[e], activate(bias_at(p, j), act), 1e-6);
            }
            sum_err += err;
            sum_bound += b;
          }
        // Rounding errors are independent: they add up like a random walk, far below the sum of
        // their magnitudes. A systematic error (a wrong zero point or scale) would not.
        EXPECT_LT(sum_err, 0.25 * sum_bound);
      }
    }
  }
}

// Leading dimensions flatten into rows; a strided input is read as its values.
TEST(LinearLowp, BatchedAndNonContiguousInputsMatchTheFlatProblem) {
  for (ComputeType prec : {ComputeType::bfloat16, ComputeType::int8}) {
    const Tensor w = random_tensor({24, 40}, DType::f32, 7);
    const Tensor b = random_tensor({24}, DType::f32, 8);
    const Tensor x = random_tensor({3, 5, 40}, DType::f32, 9);
    const LowpWeight lw(w, prec);
    const Tensor flat = linear_lowp(x.reshape({15, 40}), lw, b, Activation::relu);
    const Tensor batched = linear_lowp(x, lw, b, Activation::relu);
    ASSERT_EQ(batched.shape(), (Shape{3, 5, 24}));
    EXPECT_TRUE(testing::bitwise_equal(batched.reshape({15, 24}), flat));
    // (5, 3, 40) transposed to (3, 5, 40): not contiguous, same values as x.
    const Tensor xt = x.transpose(0, 1).contiguous().transpose(0, 1);
    ASSERT_FALSE(xt.is_contiguous());
    EXPECT_TRUE(testing::bitwise_equal(linear_lowp(xt, lw, b, Activation::relu), batched));
  }
}

// Big M (a training-sized batch) on the packed weights, against the fp32 op: the relative
// error of the whole output stays at the format's scale.
TEST(LinearLowp, LargeBatchCloseToFp32) {
  const Tensor x = random_tensor({2048, 512}, DType::f32, 11);
  const Tensor w = random_tensor({512, 512}, DType::f32, 12, -0.05, 0.05);
  const Tensor b = random_tensor({512}, DType::f32, 13);
  const Tensor ref = linear(x, w, b, Activation::gelu);
  EXPECT_LT(testing::scaled_error(
                linear_lowp(x, LowpWeight(w, ComputeType::bfloat16), b, Activation::gelu), ref),
            std::ldexp(1.0, -8));
  // Uniform x and w: sx ≈ 2/255, sw ≈ 0.05/127; errors of ~1e-2 of max|y| at most.
  EXPECT_LT(testing::scaled_error(
                linear_lowp(x, LowpWeight(w, ComputeType::int8), b, Activation::gelu), ref),
            1e-2);
}

// At these shapes oneDNN splits rows and columns across threads, not the K reduction, and the
// conversion, quantisation and dequantisation passes work per element or per row: the thread
// count does not change a bit (a oneDNN version that split K here would fail this).
TEST(LinearLowp, SameBitsOnOneAndTwoThreads) {
  for (ComputeType prec : {ComputeType::bfloat16, ComputeType::int8}) {
    for (int64_t m : {1, 32, 300}) {
      SCOPED_TRACE(::testing::Message() << compute_type_name(prec) << " m=" << m);
      const Tensor x = random_tensor({m, 512}, DType::f32, 31);
      const Tensor w = random_tensor({384, 512}, DType::f32, 32, -0.1, 0.1);
      const Tensor b = random_tensor({384}, DType::f32, 33);
      const LowpWeight lw(w, prec);
      const Tensor one =
          testing::with_threads(1, [&] { return linear_lowp(x, lw, b, Activation::gelu); });
      const Tensor two =
          testing::with_threads(2, [&] { return linear_lowp(x, lw, b, Activation::gelu); });
      EXPECT_TRUE(testing::bitwise_equal(one, two));
    }
  }
}

TEST(LinearLowp, Bf16ConversionRoundsToNearestEven) {
  const float in[] = {1.0f,
                      1.00390625f /* 1 + 2^-8: tie, to even 1 */,
                      1.01171875f /* 1 + 3·2^-8: tie, to even 1 + 2^-6 */,
                      -3.14159265f,
                      0.0f,
                      -0.0f,
                      INFINITY,
                      3.0e38f};
  uint16_t out[8];
  cpu::float_to_bf16(8, in, out);
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(cpu::bf16_to_float(out[i]), static_cast<float>(round_bf16(in[i])));
  }
  EXPECT_EQ(cpu::bf16_to_float(out[1]), 1.0f);
  EXPECT_EQ(cpu::bf16_to_float(out[2]), 1.015625f);
  const float nan = NAN;
  uint16_t q;
  cpu::float_to_bf16(1, &nan, &q);
  EXPECT_TRUE(std::isnan(cpu::bf16_to_float(q)));
}

TEST(LinearLowp, RowQuantisationReconstructsWithinHalfAStep) {
  const Tensor x = random_tensor({6, 33}, DType::f32, 21, -3.0, 1.0);
  std::vector<uint8_t> q(6 * 33);
  std::vector<float> scale(6);
  std::vector<int32_t> zero(6);
  cpu::quantize_rows_u8(6, 33, x.data<float>(), q.data(), scale.data(), zero.data());
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 33; ++j) {
      const float v = x.data<float>()[i * 33 + j];
      EXPECT_NEAR(scale[i] * (q[i * 33 + j] - zero[i]), v, 0.5001 * scale[i]);
    }
}

// The rows gathered back out of fp32 panels are the embedding lookup of the weight itself,
// bitwise (a tied table's lookups read them when the panels are its only copy), across panel
// boundaries and in the zero-padded last panel; other precisions and bad ids are refused.
TEST(LinearLowp, PanelRowsAreTheEmbeddingLookupOfTheWeight) {
  const Tensor w = random_tensor({101, 40}, DType::f32, 71);  // 3 panels, the last of 5 columns
  const LowpWeight packed(w, ComputeType::float32);
  std::vector<int32_t> v;
  for (int32_t i = 0; i < 101; ++i) v.push_back((i * 37) % 101);
  const Tensor ids = Tensor::from_vector<int32_t>({1, 101}, v);
  EXPECT_TRUE(testing::bitwise_equal(lowp_weight_rows(ids, packed), embedding(ids, w)));
  EXPECT_TFM_ERROR(lowp_weight_rows(Tensor::from_vector<int32_t>({2}, {3, 101}), packed),
                   "id 101 at flat position 1");
  EXPECT_TFM_ERROR(lowp_weight_rows(ids, LowpWeight(w, ComputeType::bfloat16)), "not bf16 on cpu");
}

// int8 rows are the quantised weight dequantised, q · scale, the quantisation composed by hand
// (quantize_weights_s8), bitwise: from tfm's panels (CPUs without VNNI) and from the row-major copy
// a weight in oneDNN's layout keeps when packed for lookups; one packed without it is refused.
TEST(LinearLowp, Int8RowsAreTheQuantisedWeightDequantised) {
  const int64_t n = 101, k = 41;  // 3 panels of 48; an odd K ends in a half pair
  const Tensor w = random_tensor({n, k}, DType::f32, 72);
  std::vector<int8_t> q(n * k);
  std::vector<float> scales(n);
  std::vector<int32_t> sums(n);
  cpu::quantize_weights_s8(n, k, w.data<float>(), q.data(), scales.data(), sums.data());
  std::vector<int32_t> v;
  for (int32_t i = 0; i < n; ++i) v.push_back((i * 37) % n);
  const Tensor ids = Tensor::from_vector<int32_t>({1, n}, v);
  Tensor want = Tensor::empty({1, n, k});
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c)
      want.data<float>()[r * k + c] = static_cast<float>(q[v[r] * k + c]) * scales[v[r]];
  EXPECT_TRUE(testing::bitwise_equal(
      lowp_weight_rows(ids, LowpWeight(w, ComputeType::int8, false, /*lookups=*/true)), want));
  cpu::PackedWeights rows_only;  // as oneDNN's layout leaves it: no panels, the rows kept
  rows_only.kind = ComputeType::int8;
  rows_only.n = n, rows_only.k = k;
  rows_only.scales = scales;
  rows_only.rows_s8 = std::shared_ptr<int8_t>(q.data(), [](int8_t*) {});
  Tensor got = Tensor::empty({1, n, k});
  cpu::packed_weight_rows(n, v.data(), rows_only, got.data<float>());
  EXPECT_TRUE(testing::bitwise_equal(got, want));
  rows_only.rows_s8.reset();
  EXPECT_TFM_ERROR(cpu::packed_weight_rows(n, v.data(), rows_only, got.data<float>()),
                   "not int8 in oneDNN's layout without lookups");
}

TEST(LinearLowp, ParsesComputeTypeNamesAndRejectsOthers) {
  EXPECT_EQ(parse_compute_type("fp32"), ComputeType::float32);
  EXPECT_EQ(parse_compute_type("float32"), ComputeType::float32);
  EXPECT_EQ(parse_compute_type("bf16"), ComputeType::bfloat16);
  EXPECT_EQ(parse_compute_type("bfloat16"), ComputeType::bfloat16);
  EXPECT_EQ(parse_compute_type("int8"), ComputeType::int8);
  EXPECT_EQ(parse_compute_type("auto"), ComputeType::automatic);
  for (ComputeType t :
       {ComputeType::float32, ComputeType::bfloat16, ComputeType::int8, ComputeType::automatic})
    EXPECT_EQ(parse_compute_type(compute_type_name(t)), t);
  EXPECT_TFM_ERROR(parse_compute_type("fp16"),
                   "unknown compute type 'fp16' (expected fp32, bf16, int8 or auto)");
  // auto: bf16 only where the CPU multiplies bf16 faster than f32; never int8 (it changes
  // results).
  EXPECT_EQ(resolve_compute_type(ComputeType::automatic),
            cpu_bf16_outruns_fp32() ? ComputeType::bfloat16 : ComputeType::float32);
  EXPECT_EQ(resolve_compute_type(ComputeType::int8), ComputeType::int8);
}

TEST(LinearLowp, RejectsBadOperands) {
  const Tensor w = random_tensor({4, 6}, DType::f32, 1);
  const LowpWeight lw(w, ComputeType::int8);
  EXPECT_TFM_ERROR(linear_lowp(random_tensor({2, 5}, DType::f32, 2), lw), "in_features 6");
  EXPECT_TFM_ERROR(linear_lowp(random_tensor({2, 6}, DType::f32, 2), lw, Tensor::zeros({3})),
                   "out_features 4");
  EXPECT_TFM_ERROR(LowpWeight(random_tensor({4, 6}, DType::f64, 1), ComputeType::bfloat16),
                   "expected an f32 weight");
  EXPECT_TFM_ERROR(LowpWeight(random_tensor({4, 6}, DType::f64, 1), ComputeType::float32),
                   "expected an f32 weight");  // fp32 packs too (test_packed_linear.cpp)
  Tensor bad = random_tensor({2, 6}, DType::f32, 3);
  bad.data<float>()[4] = NAN;
  EXPECT_TFM_ERROR(linear_lowp(bad, lw), "row 0 of the input holds inf or NaN");
  // Big enough to run on several threads: the error still reaches the caller.
  testing::with_threads(2, [&] {
    const LowpWeight wide(random_tensor({4, 64}, DType::f32, 4), ComputeType::int8);
    Tensor many = random_tensor({4096, 64}, DType::f32, 5);
    many.data<float>()[4000 * 64 + 3] = INFINITY;
    EXPECT_TFM_ERROR(linear_lowp(many, wide), "row 4000 of the input holds inf or NaN");
    Tensor w = random_tensor({4096, 64}, DType::f32, 6);
    w.data<float>()[3000 * 64] = NAN;
    EXPECT_TFM_ERROR(LowpWeight(w, ComputeType::int8), "int8 weights: row 3000 holds inf or NaN");
    return 0;
  });
}

}  // namespace
}  // namespace tfm
