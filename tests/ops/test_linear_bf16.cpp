// linear(..., ComputeType::bfloat16): mixed-precision training's linear. Its three GEMMs must be
// the exact products of the bf16-ROUNDED operands (x, w, and the output gradient), summed in f32,
// while bias, activation and db stay f32. The references below round with their own code and sum
// in double, so the only slack is f32 accumulation (≪ the 2⁻⁸ of bf16 rounding, which a wrong
// rounding or an f32 GEMM would exceed).
#include <cmath>
#include <cstring>

#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/ops/activation.h"
#include "tfm/ops/linear.h"

namespace tfm {
namespace {

using testing::activate;
using testing::random_tensor;
using testing::round_bf16;

std::vector<double> rounded(const Tensor& t) {
  std::vector<double> out;
  for (float v : t.contiguous().to_vector<float>()) out.push_back(round_bf16(v));
  return out;
}

// Each |got − want| within f32 accumulation error of the sum of |terms| (plus a floor for the
// tiny ones), element by element.
void expect_close(const std::vector<float>& got, const std::vector<double>& want,
                  const std::vector<double>& magnitude, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = 1e-5 * magnitude[i] + 1e-6;
    ASSERT_NEAR(got[i], want[i], tol) << what << " element " << i;
  }
}

struct Case {
  int64_t rows, in, out;
};

TEST(LinearBf16, ForwardAndBackwardAreProductsOfRoundedOperands) {
  const Case cases[] = {{1, 1, 1}, {3, 5, 7}, {17, 67, 33}, {64, 256, 130}, {130, 96, 48}};
  uint64_t seed = 100;
  for (const Case& c : cases)
    for (Activation act : {Activation::none, Activation::relu, Activation::gelu, Activation::silu,
                           Activation::gelu_tanh})
      for (bool with_bias : {true, false}) {
        SCOPED_TRACE(::testing::Message()
                     << "rows " << c.rows << " in " << c.in << " out " << c.out << " act "
                     << static_cast<int>(act) << " bias " << with_bias);
        Tensor x = random_tensor({c.rows, c.in}, DType::f32, seed++, -2, 2).set_requires_grad(true);
        Tensor w = random_tensor({c.out, c.in}, DType::f32, seed++).set_requires_grad(true);
        Tensor b = with_bias ? random_tensor({c.out}, DType::f32, seed++).set_requires_grad(true)
                             : Tensor();
        Tensor gy = random_tensor({c.rows, c.out}, DType::f32, seed++);
        Tensor y = linear(x, w, b, act, ComputeType::bfloat16);
        autograd::backward(y, gy);

        const std::vector<double> xr = rounded(x), wr = rounded(w);
        const std::vector<float> bv =
            with_bias ? b.to_vector<float>() : std::vector<float>(c.out, 0.f);
        const std::vector<float> g = gy.to_vector<float>();
        // z = x̃·w̃ᵀ + b in double.
        std::vector<double> y_ref(c.rows * c.out), y_mag(c.rows * c.out), dz(c.rows * c.out),
            dz_r(c.rows * c.out);
        for (int64_t i = 0; i < c.rows; ++i)
          for (int64_t j = 0; j < c.out; ++j) {
            double z = bv[j], mag = std::fabs(bv[j]);
            for (int64_t p = 0; p < c.in; ++p) {
              z += xr[i * c.in + p] * wr[j * c.in + p];
              mag += std::fabs(xr[i * c.in + p] * wr[j * c.in + p]);
            }
            y_ref[i * c.out + j] = activate(z, act);
            y_mag[i * c.out + j] = mag;
            dz[i * c.out + j] = g[i * c.out + j];  // used without an activation only
          }
        expect_close(y.to_vector<float>(), y_ref, y_mag, "y");
        // dX and dW against the reference only without an activation, where dz = gy exactly and
        // so is its rounding; with one, the op's f32 dz may round to another bf16 than this
        // double one, and ActivationGradientsAreTheComposedOps checks those cases instead.
        if (act != Activation::none) continue;
        for (size_t i = 0; i < dz.size(); ++i) dz_r[i] = round_bf16(static_cast<float>(dz[i]));
        std::vector<double> dx_ref(c.rows * c.in, 0), dx_mag(c.rows * c.in, 0);
        for (int64_t i = 0; i < c.rows; ++i)
          for (int64_t p = 0; p < c.in; ++p)
            for (int64_t j = 0; j < c.out; ++j) {
              const double t = dz_r[i * c.out + j] * wr[j * c.in + p];
              dx_ref[i * c.in + p] += t;
              dx_mag[i * c.in + p] += std::fabs(t);
            }
        std::vector<double> dw_ref(c.out * c.in, 0), dw_mag(c.out * c.in, 0);
        for (int64_t j = 0; j < c.out; ++j)
          for (int64_t p = 0; p < c.in; ++p)
            for (int64_t i = 0; i < c.rows; ++i) {
              const double t = dz_r[i * c.out + j] * xr[i * c.in + p];
              dw_ref[j * c.in + p] += t;
              dw_mag[j * c.in + p] += std::fabs(t);
            }
        expect_close(x.grad().to_vector<float>(), dx_ref, dx_mag, "dx");
        expect_close(w.grad().to_vector<float>(), dw_ref, dw_mag, "dw");
        if (with_bias) {
          std::vector<double> db_ref(c.out, 0), db_mag(c.out, 0);
          for (int64_t i = 0; i < c.rows; ++i)
            for (int64_t j = 0; j < c.out; ++j) {
              db_ref[j] += dz[i * c.out + j];
              db_mag[j] += std::fabs(dz[i * c.out + j]);
            }
          // db is not rounded: f32 sums of the f32 dz.
          expect_close(b.grad().to_vector<float>(), db_ref, db_mag, "db");
        }
      }
}

// With an activation fused, the gradients are those of the activation op applied to the plain bf16
// linear: the same dz, then the same bf16 GEMMs.
TEST(LinearBf16, ActivationGradientsAreTheComposedOps) {
  uint64_t seed = 300;
  for (Activation act :
       {Activation::relu, Activation::gelu, Activation::silu, Activation::gelu_tanh})
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(::testing::Message()
                   << "act " << static_cast<int>(act) << " bias " << with_bias);
      const Tensor x0 = random_tensor({37, 67}, DType::f32, seed++, -2, 2);
      const Tensor w0 = random_tensor({45, 67}, DType::f32, seed++);
      const Tensor b0 = with_bias ? random_tensor({45}, DType::f32, seed++) : Tensor();
      const Tensor gy = random_tensor({37, 45}, DType::f32, seed++);
      std::vector<Tensor> grads[2];
      for (int composed = 0; composed < 2; ++composed) {
        Tensor x = x0.clone().set_requires_grad(true), w = w0.clone().set_requires_grad(true);
        Tensor b = with_bias ? b0.clone().set_requires_grad(true) : Tensor();
        Tensor y;
        if (composed) {
          const Tensor z = linear(x, w, b, Activation::none, ComputeType::bfloat16);
          y = act == Activation::relu   ? relu(z)
              : act == Activation::gelu ? gelu(z)
              : act == Activation::silu ? silu(z)
                                        : gelu_tanh(z);
        } else {
          y = linear(x, w, b, act, ComputeType::bfloat16);
        }
        autograd::backward(y, gy);
        grads[composed] = {y.detach(), x.grad(), w.grad()};
        if (with_bias) grads[composed].push_back(b.grad());
      }
      for (size_t i = 0; i < grads[0].size(); ++i)
        EXPECT_TRUE(testing::all_close(grads[0][i], grads[1][i], 1e-5, 1e-6)) << "output " << i;
    }
}

// The rounding is real: on values that bf16 cannot hold, the result differs from fp32's by about
// 2⁻⁹ of the magnitude, far more than the tolerance above.
TEST(LinearBf16, DiffersFromFp32ByRoundingOnly) {
  Tensor x = random_tensor({32, 128}, DType::f32, 7);
  Tensor w = random_tensor({64, 128}, DType::f32, 8);
  const std::vector<float> y16 =
      linear(x, w, Tensor(), Activation::none, ComputeType::bfloat16).to_vector<float>();
  const std::vector<float> y32 = linear(x, w).to_vector<float>();
  double worst = 0, scale = 0;
  for (size_t i = 0; i < y16.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(y16[i]) - y32[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(y32[i])));
  }
  EXPECT_GT(worst, 1e-4 * scale);  // not an f32 GEMM
  EXPECT_LT(worst, 2e-2 * scale);  // but no more than bf16 rounding
}

TEST(LinearBf16, SavesOnlyWhatTheBackwardNeeds) {
  // Frozen weight: only dX; frozen input: only dW; either way the other gradient stays undefined.
  Tensor x = random_tensor({9, 20}, DType::f32, 11).set_requires_grad(true);
  Tensor w = random_tensor({12, 20}, DType::f32, 12);
  autograd::backward(linear(x, w, Tensor(), Activation::relu, ComputeType::bfloat16),
                     random_tensor({9, 12}, DType::f32, 13));
  EXPECT_TRUE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  Tensor x2 = random_tensor({9, 20}, DType::f32, 11);
  Tensor w2 = w.clone().set_requires_grad(true);
  autograd::backward(linear(x2, w2, Tensor(), Activation::none, ComputeType::bfloat16),
                     random_tensor({9, 12}, DType::f32, 13));
  EXPECT_TRUE(w2.grad().defined());
}

TEST(LinearBf16, RejectsWhatItCannotRun) {
  Tensor x = random_tensor({2, 3}, DType::f64, 1), w = random_tensor({4, 3}, DType::f64, 2);
  EXPECT_THROW(linear(x, w, Tensor(), Activation::none, ComputeType::bfloat16), Error);
  EXPECT_EQ(resolve_compute_type(parse_compute_type("bf16"), Device::cpu, true),
            ComputeType::bfloat16);
  EXPECT_TFM_ERROR(resolve_compute_type(ComputeType::int8, Device::cpu, true),
                   "int8 is an inference compute type");
  EXPECT_TFM_ERROR(
      linear(random_tensor({2, 3}, DType::f32, 3), random_tensor({4, 3}, DType::f32, 4), Tensor(),
             Activation::none, ComputeType::int8),
      "linear: int8 is an inference compute type");
}

// On a GPU (no device needed to resolve): training in fp32 or bf16, inference in fp32, bf16 or
// int8; auto meaning bf16 (the tensor cores' type) in both.
TEST(LinearBf16, ComputeTypesOnCuda) {
  EXPECT_EQ(resolve_compute_type(ComputeType::automatic, Device::cuda, true),
            ComputeType::bfloat16);
  EXPECT_EQ(resolve_compute_type(ComputeType::bfloat16, Device::cuda, true), ComputeType::bfloat16);
  EXPECT_EQ(resolve_compute_type(ComputeType::float32, Device::cuda, true), ComputeType::float32);
  EXPECT_TFM_ERROR(resolve_compute_type(ComputeType::int8, Device::cuda, true),
                   "int8 is an inference compute type");
  EXPECT_EQ(resolve_compute_type(ComputeType::automatic, Device::cuda, false),
            ComputeType::bfloat16);
  for (ComputeType t : {ComputeType::float32, ComputeType::bfloat16, ComputeType::int8})
    EXPECT_EQ(resolve_compute_type(t, Device::cuda, false), t);
}

}  // namespace
}  // namespace tfm
