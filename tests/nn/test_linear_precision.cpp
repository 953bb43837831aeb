// nn::Linear's kernel binding: the training path whenever gradients are needed, the weight bound
// for inference otherwise; binding is explicit, a training forward drops it, and a binding can
// release the f32 weight (or be made from a file's copy, never filling it) so that one copy
// remains.
#include <span>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/nn/linear.h"

namespace tfm {
namespace {

using testing::bitwise_equal;
using testing::random_tensor;

TEST(LinearPrecision, GradModeRunsTheTrainingPathAndInferenceTheBoundWeight) {
  for (ComputeType prec : {ComputeType::bfloat16, ComputeType::int8}) {
    SCOPED_TRACE(compute_type_name(prec));
    Generator gen(3);
    nn::Linear layer(48, 40, true, gen);
    layer.bias_.data<float>()[5] = 0.25f;
    const Tensor x = random_tensor({2, 7, 48}, DType::f32, 4);
    const Tensor fp32 = linear(x, layer.weight_, layer.bias_, Activation::relu);
    layer.bind(prec);
    EXPECT_EQ(layer.kernel().inference_compute(), prec);
    {
      NoGradGuard no_grad;
      const Tensor low = layer(x, Activation::relu);
      const Tensor want =
          linear_lowp(x, LowpWeight(layer.weight_, prec), layer.bias_, Activation::relu);
      EXPECT_TRUE(bitwise_equal(low, want));
      EXPECT_GT(testing::max_abs_diff(low, fp32), 0.0);
    }
    // Grad mode with parameters that require grad: the training path, exactly fp32, and the
    // binding is gone (the optimiser is about to move the weights).
    EXPECT_TRUE(bitwise_equal(layer(x, Activation::relu), fp32));
    EXPECT_FALSE(layer.kernel().bound());
    NoGradGuard no_grad;
    EXPECT_TRUE(bitwise_equal(layer(x, Activation::relu), fp32));
    // fp32 binding: every row count runs on the packed copy, the same values summed in the
    // packed kernel's own order (equal to the training path's to rounding).
    layer.bind(ComputeType::float32);
    const LowpWeight panels(layer.weight_, ComputeType::float32);
    const Tensor packed = linear_lowp(x, panels, layer.bias_, Activation::relu);
    EXPECT_TRUE(bitwise_equal(layer(x, Activation::relu), packed));
    EXPECT_LT(testing::max_abs_diff(packed, fp32), 1e-5);
    const Tensor big = random_tensor({300, 48}, DType::f32, 5);
    const Tensor big_plain = linear(big, layer.weight_, layer.bias_);
    EXPECT_TRUE(bitwise_equal(layer(big), linear_lowp(big, panels, layer.bias_)));
    EXPECT_LT(testing::max_abs_diff(layer(big), big_plain), 1e-5);
  }
}

// A binding is a snapshot made once: no per-call check of the weights. Binding again after a
// change serves the new weights; unbinding returns to the plain path.
TEST(LinearPrecision, BindingIsExplicitAndMadeOnce) {
  Generator gen(5);
  nn::Linear layer(32, 16, false, gen);
  NoGradGuard no_grad;
  const Tensor x = random_tensor({3, 32}, DType::f32, 6);
  layer.bind(ComputeType::int8);
  const LowpWeight* first = layer.kernel().bound_weight();
  ASSERT_NE(first, nullptr);
  const Tensor before = layer(x);
  EXPECT_TRUE(bitwise_equal(layer(x), before));
  EXPECT_EQ(layer.kernel().bound_weight(), first);
  // An in-place edit is not noticed: the binding is a snapshot.
  for (float& v : std::span(layer.weight_.data<float>(), layer.weight_.numel())) v *= 2.f;
  EXPECT_TRUE(bitwise_equal(layer(x), before));
  layer.bind(ComputeType::int8);
  const Tensor after = layer(x);
  EXPECT_GT(testing::max_abs_diff(after, before), 0.0);
  layer.kernel().unbind();
  EXPECT_TRUE(bitwise_equal(layer(x), linear(x, layer.weight_)));
  EXPECT_TFM_ERROR(layer.kernel().bind(layer.weight_, ComputeType::automatic),
                   "resolve the compute type first");
}

// Without keep_f32 a binding releases the f32 weight: one copy of each weight stays, inference
// runs on it at every row count, and training is refused with a clear error.
TEST(LinearPrecision, ReleasedWeightsServeInferenceOnly) {
  Generator gen(7);
  const Tensor x = random_tensor({200, 24}, DType::f32, 8);
  // bf16, and fp32 too: the panels serve every row count.
  for (ComputeType t : {ComputeType::bfloat16, ComputeType::float32}) {
    SCOPED_TRACE(compute_type_name(t));
    nn::Linear layer(24, 8, true, gen);
    Tensor want;
    {
      NoGradGuard no_grad;
      want = linear_lowp(x, LowpWeight(layer.weight_, t), layer.bias_);
    }
    layer.bind(t, /*keep_f32=*/false);
    EXPECT_FALSE(layer.weight_.defined());
    {
      NoGradGuard no_grad;
      EXPECT_TRUE(bitwise_equal(layer(x), want));
      EXPECT_TFM_ERROR(layer(x.to(DType::f64)), "released for inference");
    }
    EXPECT_TFM_ERROR(layer(x.clone().set_requires_grad(true)), "released for inference");
    EXPECT_TFM_ERROR(layer.bind(ComputeType::int8), "released already");
  }
}

// A layer whose weight is never allocated (a model built to be bound from a file) binds from
// another tensor holding the weight: the same products as binding its own copy, and the
// parameter stays undefined.
TEST(LinearPrecision, BindFromAFilesCopyNeverFillsTheParameter) {
  Generator gen(12);
  nn::Linear plain(16, 12, true, gen);
  Generator none = Generator::weights_unallocated();
  nn::Linear lazy(16, 12, true, none);
  EXPECT_FALSE(lazy.weight_.defined());
  EXPECT_EQ(lazy.in_features(), 16);
  EXPECT_EQ(lazy.out_features(), 12);
  lazy.bias_.copy_(plain.bias_);
  const Tensor x = random_tensor({5, 16}, DType::f32, 13);
  for (ComputeType t : {ComputeType::float32, ComputeType::bfloat16, ComputeType::int8}) {
    SCOPED_TRACE(compute_type_name(t));
    plain.bind(t);
    lazy.bind_from(plain.weight_, t);
    NoGradGuard no_grad;
    EXPECT_TRUE(bitwise_equal(lazy(x), plain(x)));
    EXPECT_FALSE(lazy.weight_.defined());
  }
  EXPECT_TFM_ERROR(lazy.bind_from(plain.weight_.transpose(0, 1), ComputeType::int8),
                   "expected a weight (12, 16)");
  EXPECT_TFM_ERROR(lazy.bind(ComputeType::int8), "released already");
}

TEST(LinearPrecision, F64InputsStayOnTheReferencePath) {
  Generator gen(10);
  nn::Linear layer(6, 4, true, gen);
  const Tensor w64 = layer.weight_.to(DType::f64), b64 = layer.bias_.to(DType::f64);
  nn::LinearKernel kernel;
  kernel.bind(layer.weight_, ComputeType::int8);
  NoGradGuard no_grad;
  const Tensor x = random_tensor({3, 6}, DType::f64, 11);
  EXPECT_TRUE(bitwise_equal(kernel.forward(x, w64, b64, Activation::gelu),
                            linear(x, w64, b64, Activation::gelu)));
}

}  // namespace
}  // namespace tfm
