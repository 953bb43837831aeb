// nn::Linear's precision switch: fp32 whenever gradients are needed, the prepared bf16/int8 copy
// otherwise, and a fresh copy once the weights change.
#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/nn/linear.h"

namespace tfm {
namespace {

using testing::bitwise_equal;
using testing::random_tensor;

TEST(LinearPrecision, GradModeRunsFp32AndInferenceRunsThePreparedCopy) {
  for (ComputeType prec : {ComputeType::bfloat16, ComputeType::int8}) {
    SCOPED_TRACE(compute_type_name(prec));
    Generator gen(3);
    nn::Linear layer(48, 40, true, gen);
    layer.bias_.data<float>()[5] = 0.25f;
    const Tensor x = random_tensor({2, 7, 48}, DType::f32, 4);
    const Tensor fp32 = linear(x, layer.weight_, layer.bias_, Activation::relu);
    layer.set_precision(prec);
    EXPECT_EQ(layer.precision(), prec);
    // Grad mode with parameters that require grad: the training path, exactly fp32.
    EXPECT_TRUE(bitwise_equal(layer(x, Activation::relu), fp32));
    NoGradGuard no_grad;
    const Tensor low = layer(x, Activation::relu);
    const Tensor want =
        linear_lowp(x, LowpWeight(layer.weight_, prec), layer.bias_, Activation::relu);
    EXPECT_TRUE(bitwise_equal(low, want));
    EXPECT_GT(testing::max_abs_diff(low, fp32), 0.0);
    // fp32 without gradients: few rows run on the packed copy, the same values summed in the
    // packed kernel's own order (equal to the training path's to rounding).
    layer.set_precision(ComputeType::float32);
    const Tensor packed =
        linear_lowp(x, LowpWeight(layer.weight_, ComputeType::float32), layer.bias_, Activation::relu);
    EXPECT_TRUE(bitwise_equal(layer(x, Activation::relu), packed));
    EXPECT_LT(testing::max_abs_diff(packed, fp32), 1e-5);
  }
}

TEST(LinearPrecision, PreparedOnceAndAgainWhenTheWeightsChange) {
  Generator gen(5);
  nn::Linear layer(32, 16, false, gen);
  layer.set_precision(ComputeType::int8);
  NoGradGuard no_grad;
  const Tensor x = random_tensor({3, 32}, DType::f32, 6);
  const Tensor before = layer(x);
  EXPECT_TRUE(bitwise_equal(layer(x), before));
  // An in-place update (as an optimiser step does): every value moves.
  float* w = layer.weight_.data<float>();
  for (int64_t i = 0; i < layer.weight_.numel(); ++i) w[i] = -w[i] * 1.5f;
  const Tensor after = layer(x);
  EXPECT_TRUE(bitwise_equal(after, linear_lowp(x, LowpWeight(layer.weight_, ComputeType::int8))));
  EXPECT_GT(testing::max_abs_diff(after, before), 0.1);
  // A new tensor assigned to the parameter (a loaded checkpoint).
  layer.weight_ = random_tensor({16, 32}, DType::f32, 7);
  EXPECT_TRUE(bitwise_equal(layer(x), linear_lowp(x, LowpWeight(layer.weight_, ComputeType::int8))));
}

TEST(LinearPrecision, SwitchPreparesOnceAndNoticesChanges) {
  Generator gen(8);
  nn::Linear layer(24, 8, true, gen);
  nn::PrecisionSwitch sw;
  sw.set_fp32_packing(false);
  EXPECT_EQ(sw.prepared(layer.weight_), nullptr);  // fp32 on the training path needs no copy
  sw.set_fp32_packing(true);
  const auto packed = sw.prepared(layer.weight_);  // fp32 inference: the same values, packed
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(packed->precision(), ComputeType::float32);
  EXPECT_EQ(packed->bytes(), static_cast<size_t>(24 * 48) * sizeof(float));  // one (24, 48) panel
  sw.set_precision(ComputeType::bfloat16);
  const auto a = sw.prepared(layer.weight_);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(sw.prepared(layer.weight_), a);
  layer.weight_.data<float>()[layer.weight_.numel() - 1] += 1.0f;  // the last value is sampled
  const auto b = sw.prepared(layer.weight_);
  EXPECT_NE(b, a);
  sw.invalidate();
  EXPECT_NE(sw.prepared(layer.weight_), b);
  // A training forward drops the copy: the optimiser will move the weights next.
  const auto c = sw.prepared(layer.weight_);
  const Tensor x = random_tensor({2, 24}, DType::f32, 9);
  sw.linear(x, layer.weight_, layer.bias_, Activation::none);
  EXPECT_NE(sw.prepared(layer.weight_), c);
}

TEST(LinearPrecision, F64InputsStayOnTheReferencePath) {
  Generator gen(10);
  nn::Linear layer(6, 4, true, gen);
  const Tensor w64 = layer.weight_.to(DType::f64), b64 = layer.bias_.to(DType::f64);
  nn::PrecisionSwitch sw;
  sw.set_precision(ComputeType::int8);
  NoGradGuard no_grad;
  const Tensor x = random_tensor({3, 6}, DType::f64, 11);
  EXPECT_TRUE(bitwise_equal(sw.linear(x, w64, b64, Activation::gelu),
                            linear(x, w64, b64, Activation::gelu)));
}

}  // namespace
}  // namespace tfm
