#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/ops/elementwise.h"

namespace tfm {
namespace {

using testing::all_close;
using testing::random_tensor;

TEST(Tape, NoGradModeRecordsNothing) {
  autograd::clear_tape();
  Tensor a = random_tensor({3}, DType::f64, 1).set_requires_grad(true);
  {
    NoGradGuard ng;
    Tensor b = mul(a, a);
    EXPECT_FALSE(b.requires_grad());
    EXPECT_EQ(autograd::tape_size(), 0u);
  }
  Tensor c = mul(a, a);
  EXPECT_TRUE(c.requires_grad());
  EXPECT_EQ(autograd::tape_size(), 1u);
  autograd::clear_tape();
}

TEST(Tape, InputsWithoutGradAreNotRecorded) {
  autograd::clear_tape();
  Tensor a = random_tensor({3}, DType::f64, 1);
  Tensor b = add(a, a);
  EXPECT_FALSE(b.requires_grad());
  EXPECT_EQ(autograd::tape_size(), 0u);
}

TEST(Tape, BackwardClearsTheTapeAndFreesIntermediateGradients) {
  Tensor a = random_tensor({4}, DType::f64, 2).set_requires_grad(true);
  Tensor h = scale(a, 3.0);
  Tensor y = mul(h, h);
  EXPECT_EQ(autograd::tape_size(), 2u);
  autograd::backward(y, Tensor::ones({4}, DType::f64));
  EXPECT_EQ(autograd::tape_size(), 0u);
  EXPECT_FALSE(h.grad().defined());  // intermediate: freed once its producer ran
  // d/da (3a)^2 = 18 a
  EXPECT_TRUE(all_close(a.grad(), scale(a.detach(), 18.0), 1e-14, 0));
}

TEST(Tape, AliasedGradientsAreNotCorruptedByAccumulation) {
  // add's backward hands the same gradient tensor to both inputs; accumulating into one of them
  // later must not change the other.
  Tensor a = random_tensor({5}, DType::f64, 3).set_requires_grad(true);
  Tensor b = random_tensor({5}, DType::f64, 4).set_requires_grad(true);
  Tensor y = add(add(a, b), a);  // dy/da = 2, dy/db = 1
  autograd::backward(y, Tensor::ones({5}, DType::f64));
  EXPECT_TRUE(all_close(a.grad(), Tensor::full({5}, 2.0, DType::f64), 0, 0));
  EXPECT_TRUE(all_close(b.grad(), Tensor::full({5}, 1.0, DType::f64), 0, 0));
}

TEST(Tape, UnreachedBranchesAreSkipped) {
  Tensor a = random_tensor({2}, DType::f64, 5).set_requires_grad(true);
  Tensor b = random_tensor({2}, DType::f64, 6).set_requires_grad(true);
  Tensor unused = mul(b, b);
  Tensor y = scale(a, 2.0);
  autograd::backward(y, Tensor::ones({2}, DType::f64));
  EXPECT_TRUE(all_close(a.grad(), Tensor::full({2}, 2.0, DType::f64), 0, 0));
  EXPECT_FALSE(b.grad().defined());
}

TEST(Tape, ZeroGradResets) {
  Tensor a = random_tensor({2}, DType::f64, 7).set_requires_grad(true);
  autograd::backward(scale(a, 2.0), Tensor::ones({2}, DType::f64));
  a.zero_grad();
  EXPECT_FALSE(a.grad().defined());
  autograd::backward(scale(a, 5.0), Tensor::ones({2}, DType::f64));
  EXPECT_TRUE(all_close(a.grad(), Tensor::full({2}, 5.0, DType::f64), 0, 0));
}

TEST(Tape, Errors) {
  Tensor a = random_tensor({2}, DType::f64, 8);
  EXPECT_TFM_ERROR(autograd::backward(a), "does not require grad");
  Tensor p = random_tensor({2}, DType::f64, 9).set_requires_grad(true);
  Tensor y = scale(p, 2.0);
  EXPECT_TFM_ERROR(autograd::backward(y), "needs a scalar");
  EXPECT_TFM_ERROR(autograd::backward(y, Tensor::ones({3}, DType::f64)), "gradient f64 (3)");
  autograd::clear_tape();
  EXPECT_TFM_ERROR(Tensor::zeros({2}, DType::i32).set_requires_grad(true),
                   "only floating tensors can require grad");
}

}  // namespace
}  // namespace tfm
