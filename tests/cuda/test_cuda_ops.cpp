// The op front ends on CUDA tensors against the same front ends on CPU tensors: one harness runs
// each op forward and backward (through the autograd tape) on both devices from the same inputs
// and upstream gradient, and compares the output and every input's gradient. The kernels
// themselves are checked in test_cuda_kernels; this checks the dispatch on the tensors' device
// above them (allocation on the right device, argument order, the backward's branch). Bitwise
// where both sides do the same f32 operations; tolerances where reductions differ in order.
// Every test skips with "no CUDA device" on machines without a GPU.
#ifdef TFM_WITH_CUDA
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "support/test_util.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/cuda/runtime.h"
#include "tfm/core/device_copy.h"
#include "tfm/ops/activation.h"
#include "tfm/ops/attention.h"
#include "tfm/ops/cross_entropy.h"
#include "tfm/ops/decode_attention.h"
#include "tfm/ops/decode_steps.h"
#include "tfm/ops/dropout.h"
#include "tfm/ops/elementwise.h"
#include "tfm/ops/embedding.h"
#include "tfm/ops/index.h"
#include "tfm/ops/init.h"
#include "tfm/ops/layer_norm.h"
#include "tfm/ops/linear.h"
#include "tfm/ops/matmul.h"
#include "tfm/ops/optimizer.h"
#include "tfm/ops/reduce.h"
#include "tfm/ops/shape.h"
#include "tfm/ops/softmax.h"

namespace tfm {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::random_ids;
using testing::random_tensor;

struct OpCase {
  std::string name;
  std::vector<Tensor> inputs;  // on the CPU; float ones get gradients
  std::function<Tensor(const std::vector<Tensor>&)> f;
  bool bitwise = false;
  double rtol = 1e-5, atol = 1e-6;
};

// Runs c on `device`: the output and the gradient of every float input (undefined for ids).
std::vector<Tensor> run(const OpCase& c, Device device, const Tensor& upstream) {
  std::vector<Tensor> in;
  for (const Tensor& t : c.inputs) {
    Tensor d = to_device(t, device).detach();  // a leaf of its own on either device
    if (d.dtype() == DType::f32) d.set_requires_grad(true);
    in.push_back(d);
  }
  Tensor y = c.f(in);
  autograd::backward(y, to_device(upstream, device));
  std::vector<Tensor> out{to_device(y.detach(), Device::cpu)};
  for (const Tensor& t : in)
    out.push_back(t.requires_grad() && t.grad().defined() ? to_device(t.grad(), Device::cpu)
                                                          : Tensor());
  cuda::synchronize();
  return out;
}

void check(const OpCase& c) {
  SCOPED_TRACE(c.name);
  std::vector<Tensor> cpu_in;
  for (const Tensor& t : c.inputs) cpu_in.push_back(t.detach());
  const Tensor y_shape = c.f(cpu_in);
  const Tensor upstream = random_tensor(y_shape.shape(), DType::f32, 99);
  const std::vector<Tensor> want = run(c, Device::cpu, upstream);
  const std::vector<Tensor> got = run(c, Device::cuda, upstream);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i == 0 ? std::string("output") : "gradient of input " + std::to_string(i - 1));
    ASSERT_EQ(got[i].defined(), want[i].defined());
    if (!want[i].defined()) continue;
    if (c.bitwise) {
      EXPECT_TRUE(bitwise_equal(got[i], want[i]));
    } else {
      EXPECT_TRUE(all_close(got[i], want[i], c.rtol, c.atol));
    }
  }
}

class CudaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::has_device()) GTEST_SKIP() << "no CUDA device: " << cuda::no_device_reason();
  }
};

TEST_F(CudaOps, ElementwiseAreBitwiseTheCpus) {
  const Tensor a = random_tensor({37, 129}, DType::f32, 1),
               b = random_tensor({37, 129}, DType::f32, 2);
  check({"add", {a, b}, [](const auto& x) { return add(x[0], x[1]); }, true});
  check({"sub", {a, b}, [](const auto& x) { return sub(x[0], x[1]); }, true});
  check({"mul", {a, b}, [](const auto& x) { return mul(x[0], x[1]); }, true});
  check({"scale", {a}, [](const auto& x) { return scale(x[0], 0.37); }, true});
  check({"relu", {a}, [](const auto& x) { return relu(x[0]); }, true});
  check({"dropout",
         {a},
         [](const auto& x) {
           Generator gen(7);  // the same stream on both devices
           return dropout(x[0], 0.3, true, &gen);
         },
         true});
  // gelu's erf differs between the CUDA and glibc implementations in the last bits.
  check({"gelu", {a}, [](const auto& x) { return gelu(x[0]); }, false, 1e-6, 1e-6});
}

TEST_F(CudaOps, GradientsOfATensorUsedTwiceAccumulate) {
  // x reaches the loss three times: the tape adds the second and third gradients into the first
  // (Tensor::add_ on the device).
  const Tensor x = random_tensor({33, 65}, DType::f32, 30),
               y = random_tensor({33, 65}, DType::f32, 31);
  check({"x·y + 2x + relu(x)",
         {x, y},
         [](const auto& t) { return add(add(mul(t[0], t[1]), scale(t[0], 2.0)), relu(t[0])); },
         true});
}

TEST_F(CudaOps, RowOps) {
  const Tensor x = random_tensor({6, 5, 203}, DType::f32, 3, -4, 4);
  const Tensor r = random_tensor({6, 5, 203}, DType::f32, 4);
  const Tensor g = random_tensor({203}, DType::f32, 5, 0.5, 1.5),
               b = random_tensor({203}, DType::f32, 6);
  check({"softmax", {x}, [](const auto& t) { return softmax(t[0]); }});
  check({"log_softmax", {x}, [](const auto& t) { return log_softmax(t[0]); }});
  check({"layer_norm",
         {x, g, b},
         [](const auto& t) { return layer_norm(t[0], t[1], t[2], 1e-5); },
         false,
         1e-5,
         1e-5});
  check({"add_layer_norm",
         {x, r, g, b},
         [](const auto& t) {
           AddLayerNormResult o = add_layer_norm(t[0], t[1], t[2], t[3], 1e-5);
           return add(o.y, scale(o.sum, 0.5));  // both outputs reach the loss
         },
         false,
         1e-5,
         1e-5});
}

TEST_F(CudaOps, EmbeddingAndCrossEntropy) {
  const Tensor ids = random_ids({4, 9}, 50, 7);
  const Tensor w = random_tensor({50, 24}, DType::f32, 8);
  check({"embedding", {ids, w}, [](const auto& t) { return embedding(t[0], t[1], 3); }, true});
  const Tensor logits = random_tensor({4, 9, 50}, DType::f32, 9, -3, 3);
  Tensor targets = random_ids({4, 9}, 50, 10);
  targets.data<int32_t>()[5] = -100;  // an ignored position
  check({"softmax_cross_entropy",
         {logits, targets},
         [](const auto& t) { return softmax_cross_entropy(t[0], t[1], 0.1).loss; },
         false,
         1e-5,
         1e-6});
}

TEST_F(CudaOps, LinearWithEachActivation) {
  const Tensor x = random_tensor({3, 7, 64}, DType::f32, 11);
  const Tensor w = random_tensor({96, 64}, DType::f32, 12, -0.2, 0.2);
  const Tensor b = random_tensor({96}, DType::f32, 13);
  for (Activation act : {Activation::none, Activation::relu, Activation::gelu, Activation::silu,
                         Activation::gelu_tanh}) {
    check({std::string("linear ") + std::to_string(static_cast<int>(act)),
           {x, w, b},
           [act](const auto& t) { return linear(t[0], t[1], t[2], act); },
           false,
           1e-4,
           1e-5});
  }
  check({"linear without bias",
         {x, w},
         [](const auto& t) { return linear(t[0], t[1]); },
         false,
         1e-4,
         1e-5});
}

// Mixed precision: both devices round x, W and dz to bf16 bit for bit and multiply the same
// values in f32 accumulation, in other orders. (GELU is left out: the devices' f32 GELUs differ
// by 1e-6, which moves dz's bf16 rounding by a whole bf16 step now and then.)
TEST_F(CudaOps, LinearInBf16IsTheCpusBf16) {
  const Tensor x = random_tensor({3, 7, 64}, DType::f32, 11);
  const Tensor w = random_tensor({96, 64}, DType::f32, 12, -0.2, 0.2);
  const Tensor b = random_tensor({96}, DType::f32, 13);
  for (Activation act : {Activation::none, Activation::relu}) {
    check({std::string("bf16 linear ") + activation_name(act),
           {x, w, b},
           [act](const auto& t) { return linear(t[0], t[1], t[2], act, ComputeType::bfloat16); },
           false,
           1e-4,
           1e-5});
  }
  check({"bf16 linear without bias",
         {x, w},
         [](const auto& t) {
           return linear(t[0], t[1], Tensor(), Activation::none, ComputeType::bfloat16);
         },
         false,
         1e-4,
         1e-5});
  // And it is bf16 there: the fp32 op on the GPU is further from the CPU's bf16 than that.
  const Tensor xg = to_device(x, Device::cuda), wg = to_device(w, Device::cuda);
  const Tensor want = linear(x, w, Tensor(), Activation::none, ComputeType::bfloat16);
  const Tensor f32 = to_device(linear(xg, wg), Device::cpu);
  EXPECT_FALSE(all_close(f32, want, 1e-4, 1e-5));
}

TEST_F(CudaOps, AttentionWithMasksAndDropout) {
  const Tensor q = random_tensor({2, 5, 32}, DType::f32, 14),
               k = random_tensor({2, 7, 32}, DType::f32, 15);
  const Tensor v = random_tensor({2, 7, 32}, DType::f32, 16);
  Tensor mask = Tensor::zeros({2, 7}, DType::u8);
  mask.data<uint8_t>()[7 + 6] = 1;  // the second sentence's last key is padding
  mask.data<uint8_t>()[7 + 5] = 1;
  check({"cross attention, padding mask",
         {q, k, v, mask},
         [](const auto& t) { return attention(t[0], t[1], t[2], 4, t[3]).out; },
         false,
         1e-5,
         1e-6});
  check({"causal self-attention",
         {k, v, v},
         [](const auto& t) {
           AttentionOptions o;
           o.causal = true;
           return attention(t[0], t[1], t[2], 4, Tensor(), o).out;
         },
         false,
         1e-5,
         1e-6});
  check({"attention dropout",
         {q, k, v},
         [](const auto& t) {
           Generator gen(42);  // the same stream on both devices: the same kept elements
           AttentionOptions o;
           o.dropout = 0.25;
           o.generator = &gen;
           return attention(t[0], t[1], t[2], 4, Tensor(), o).out;
         },
         false,
         1e-5,
         1e-6});
}

TEST_F(CudaOps, AdamStepOverRangesAndSumOfSquares) {
  const int64_t n = 10007;
  const std::vector<FlatRange> ranges{{0, 3000}, {3500, 3000}, {9000, 1007}};  // gaps untouched
  Tensor p = random_tensor({n}, DType::f32, 20), g = random_tensor({n}, DType::f32, 21);
  Tensor m = random_tensor({n}, DType::f32, 22, -0.1, 0.1);
  Tensor v = random_tensor({n}, DType::f32, 23, 0.0, 0.1);
  Tensor dp = to_device(p, Device::cuda), dg = to_device(g, Device::cuda);
  Tensor dm = to_device(m, Device::cuda), dv = to_device(v, Device::cuda);
  for (int64_t step = 1; step <= 3; ++step) {
    const kernels::AdamUpdate a =
        kernels::adam_update_for_step(step, 1e-3, 0.9, 0.98, 1e-9, 0.01, step == 2, 0.5);
    adam_step(a, p, g, m, v, ranges);
    adam_step(a, dp, dg, dm, dv, ranges);
    EXPECT_TRUE(bitwise_equal(to_device(dp, Device::cpu), p)) << "step " << step;
    EXPECT_TRUE(bitwise_equal(to_device(dm, Device::cpu), m)) << "step " << step;
    EXPECT_TRUE(bitwise_equal(to_device(dv, Device::cpu), v)) << "step " << step;
  }
  const double want = sum_of_squares({p, g, m});
  const double got = sum_of_squares({dp, dg, dm});
  EXPECT_NEAR(got, want, 1e-9 * want);  // f64 sums in two orders
}

TEST_F(CudaOps, ShapeOpsAreBitwiseTheCpus) {
  const Tensor x = random_tensor({3, 6, 10}, DType::f32, 40);
  const Tensor y = random_tensor({3, 4, 10}, DType::f32, 41);
  check({"transpose", {x}, [](const auto& t) { return transpose(t[0], 0, 2); }, true});
  // A strided view (no autograd) packed by Tensor::contiguous's device kernel.
  EXPECT_TRUE(bitwise_equal(
      to_device(reshape(to_device(x, Device::cuda).transpose(1, 2), {3, 60}), Device::cpu),
      reshape(x.transpose(1, 2), {3, 60})));
  check({"narrow inside an axis", {x}, [](const auto& t) { return narrow(t[0], 1, 2, 3); }, true});
  check({"concat", {x, y}, [](const auto& t) { return concat({t[0], t[1]}, 1); }, true});
  check({"split",
         {x},
         [](const auto& t) {
           std::vector<Tensor> p = split(t[0], {3, 7}, -1);
           return concat({scale(p[1], 2.0), p[0]}, 2);  // both parts reach the loss
         },
         true});
}

TEST_F(CudaOps, MatmulAndReductions) {
  const Tensor a = random_tensor({2, 3, 5, 7}, DType::f32, 42);
  const Tensor b = random_tensor({2, 3, 7, 4}, DType::f32, 43);
  check({"matmul", {a, b}, [](const auto& t) { return matmul(t[0], t[1]); }, false, 1e-5, 1e-6});
  const Tensor at = random_tensor({2, 3, 7, 5}, DType::f32, 44);
  const Tensor bt = random_tensor({2, 3, 4, 7}, DType::f32, 45);
  check({"matmul, both transposed",
         {at, bt},
         [](const auto& t) { return matmul(t[0], t[1], true, true); },
         false,
         1e-5,
         1e-6});
  const Tensor x = random_tensor({9, 1000}, DType::f32, 46);
  check({"sum", {x}, [](const auto& t) { return sum(t[0]); }, false, 1e-6, 1e-6});
  check({"mean", {x}, [](const auto& t) { return mean(t[0]); }, false, 1e-6, 1e-6});
  check({"sum_last", {x}, [](const auto& t) { return sum_last(t[0]); }, false, 1e-6, 1e-6});
}

TEST_F(CudaOps, IndexOpsAreBitwiseTheCpus) {
  const Tensor x = random_tensor({5, 3, 7}, DType::f32, 50);
  const std::vector<int64_t> rows{4, 0, 4, 2};
  EXPECT_TRUE(bitwise_equal(to_device(index_rows(to_device(x, Device::cuda), rows), Device::cpu),
                            index_rows(x, rows)));
  // KV-cache style: rows of src into rows of dst, with and without an index.
  const Tensor src = random_ids({6, 4, 8}, 1000, 51);  // i32
  for (bool with_index : {true, false}) {
    const std::vector<int64_t> idx{5, 1, 1};
    Tensor dst = Tensor::zeros({3, 4, 8}, DType::i32);
    Tensor ddst = to_device(dst, Device::cuda);
    copy_rows(src, with_index ? &idx : nullptr, dst);
    copy_rows(to_device(src, Device::cuda), with_index ? &idx : nullptr, ddst);
    EXPECT_TRUE(bitwise_equal(to_device(ddst, Device::cpu), dst)) << "index " << with_index;
  }
  const Tensor lp = random_tensor({4, 50}, DType::f32, 52);
  const Tensor cols = random_ids({4}, 50, 53);
  EXPECT_TRUE(bitwise_equal(
      to_device(pick_columns(to_device(lp, Device::cuda), to_device(cols, Device::cuda)),
                Device::cpu),
      pick_columns(lp, cols)));
  const Tensor ids = random_ids({5, 9}, 4, 54);
  EXPECT_TRUE(bitwise_equal(to_device(equal_mask(to_device(ids, Device::cuda), 2), Device::cpu),
                            equal_mask(ids, 2)));
  Tensor bad = Tensor::from_vector<int32_t>({4}, {0, 1, 50, 2});
  EXPECT_TFM_ERROR(pick_columns(to_device(lp, Device::cuda), to_device(bad, Device::cuda)),
                   "column 50 of row 2 outside");
  const Tensor host_dst = Tensor::zeros({3, 4, 8}, DType::i32);
  EXPECT_TFM_ERROR(copy_rows(to_device(src, Device::cuda), nullptr, host_dst),
                   "copy_rows: tensors on different devices");
}

TEST_F(CudaOps, SearchStepsMatchTheCpus) {
  // Ties on purpose (values on a grid of 1/4): the order must break them by id, as the CPU does.
  Tensor x = random_tensor({6, 300}, DType::f32, 60, -3, 3);
  for (float& v : std::span<float>(x.data<float>(), 1800)) v = std::round(v * 4) / 4;
  const Tensor dx = to_device(x, Device::cuda);
  for (int64_t k : {1, 5, 17}) {
    const TopK want = top_k_rows(x, k), got = top_k_rows(dx, k);
    EXPECT_TRUE(bitwise_equal(to_device(got.values, Device::cpu), want.values)) << "k " << k;
    EXPECT_TRUE(bitwise_equal(to_device(got.ids, Device::cpu), want.ids)) << "k " << k;
  }
  const std::vector<StepRule> rules{StepRule::keep,     StepRule::normal, StepRule::no_eos,
                                    StepRule::eos_only, StepRule::normal, StepRule::no_eos};
  const SpecialIds special{0, 1, 2};
  Tensor m = x.clone(), dm = to_device(x, Device::cuda);
  mask_step_rows(m, rules, special);
  mask_step_rows(dm, rules, special);
  EXPECT_TRUE(bitwise_equal(to_device(dm, Device::cpu), m));
  // The fused CPU path against log_softmax + mask + top-k on the device: the same picks, and
  // log-probs within rounding (the two log_softmax kernels sum in different orders).
  const Tensor logits = random_tensor({6, 300}, DType::f32, 61, -5, 5);
  const TopK want = top_k_log_probs(logits, rules, special, 4);
  const TopK got = top_k_log_probs(to_device(logits, Device::cuda), rules, special, 4);
  EXPECT_TRUE(bitwise_equal(to_device(got.ids, Device::cpu), want.ids));
  EXPECT_TRUE(all_close(to_device(got.values, Device::cpu), want.values, 1e-5, 1e-5));
  const Tensor w = random_tensor({3, 4, 1, 11}, DType::f32, 62, 0, 1);
  EXPECT_TRUE(bitwise_equal(to_device(mean_over_heads(to_device(w, Device::cuda)), Device::cpu),
                            mean_over_heads(w)));
}

TEST_F(CudaOps, DecodeAttentionMatchesTheCpus) {
  const int64_t B = 3, Bk = 5, S = 6, C = 32, H = 4;
  const Tensor q = random_tensor({B, 1, C}, DType::f32, 70);
  const Tensor k = random_tensor({Bk, S, C}, DType::f32, 71);
  const Tensor v = random_tensor({Bk, S, C}, DType::f32, 72);
  const auto dev = [](const Tensor& t) { return to_device(t, Device::cuda); };
  const auto host = [](const Tensor& t) { return to_device(t, Device::cpu); };
  {  // cross-attention of beams over their sentence's keys, with padding
    Tensor mask = Tensor::zeros({Bk, S}, DType::u8);
    mask.data<uint8_t>()[S + 5] = 1;
    for (int64_t s = 0; s < S; ++s) mask.data<uint8_t>()[4 * S + s] = 1;  // row 4: all padding
    const Tensor rows = Tensor::from_vector<int32_t>({B}, {1, 1, 4});
    Tensor w_cpu, w_gpu;
    const Tensor want = decode_attention(q, k, v, H, mask, 0.0, &w_cpu, rows);
    const Tensor got =
        decode_attention(dev(q), dev(k), dev(v), H, dev(mask), 0.0, &w_gpu, dev(rows));
    EXPECT_TRUE(all_close(host(got), want, 1e-5, 1e-6));
    EXPECT_TRUE(all_close(host(w_gpu), w_cpu, 1e-5, 1e-6));
  }
  {  // self-attention through KV-cache slots, read in place from rows of a wider slot buffer
    const Tensor buf = random_ids({B, 10}, Bk, 73);
    const auto view = [S](const Tensor& t) {
      return t.transpose(0, 1).slice(0, S).transpose(0, 1);
    };
    const Tensor want = decode_attention(q, k, v, H, Tensor(), 0.0, nullptr, Tensor(), view(buf));
    const Tensor got = decode_attention(dev(q), dev(k), dev(v), H, Tensor(), 0.0, nullptr, Tensor(),
                                        view(dev(buf)));
    EXPECT_TRUE(all_close(host(got), want, 1e-5, 1e-6));
  }
}

// Indices on the device are checked by the kernels that read them, and a bad one is thrown at
// the next copy to the host (core/cuda/device_fault.h): with the op's words, once; the next
// good call is not blamed for it, and nothing out of range is read (memcheck runs this too).
TEST_F(CudaOps, BadDeviceIndicesAreThrownAtTheNextCopyToTheHost) {
  const auto dev = [](const Tensor& t) { return to_device(t, Device::cuda); };
  const auto host = [](const Tensor& t) { return to_device(t, Device::cpu); };
  const Tensor table = random_tensor({6, 8}, DType::f32, 80);
  const Tensor good = Tensor::from_vector<int32_t>({3}, {0, 5, 2});
  const Tensor bad = Tensor::from_vector<int32_t>({3}, {0, 6, 2});
  const Tensor e = embedding(dev(bad), dev(table));  // no throw yet: nothing synchronised
  EXPECT_TFM_ERROR(host(e),
                   "embedding: id 6 at flat position 1 of ids is outside [0, V) for V = 6");
  EXPECT_TRUE(bitwise_equal(host(embedding(dev(good), dev(table))), embedding(good, table)));
  EXPECT_TFM_ERROR(embedding(bad, table), "embedding: id 6 at position");  // the CPU: at once

  const int64_t B = 2, Bk = 3, S = 4, C = 16, H = 2;
  const Tensor q = random_tensor({B, 1, C}, DType::f32, 81);
  const Tensor k = random_tensor({Bk, S, C}, DType::f32, 82);
  const Tensor v = random_tensor({Bk, S, C}, DType::f32, 83);
  const Tensor rows = Tensor::from_vector<int32_t>({B}, {2, 3});
  const Tensor r = decode_attention(dev(q), dev(k), dev(v), H, Tensor(), 0.0, nullptr, dev(rows));
  EXPECT_TFM_ERROR(cuda::synchronize(), "decode_attention: kv_rows[1] = 3 outside the 3 key rows");
  EXPECT_TFM_ERROR(decode_attention(q, k, v, H, Tensor(), 0.0, nullptr, rows),
                   "kv_rows[1] = 3 outside the 3 key rows");
  const Tensor slots = Tensor::from_vector<int32_t>({B, S}, {0, 1, 2, 0, 1, -1, 0, 2});
  const Tensor s =
      decode_attention(dev(q), dev(k), dev(v), H, Tensor(), 0.0, nullptr, Tensor(), dev(slots));
  EXPECT_TFM_ERROR(host(s), "decode_attention: kv_slots at flat position 5 = -1 outside the 3");
  const Tensor fine = Tensor::from_vector<int32_t>({B, S}, {0, 1, 2, 0, 1, 1, 0, 2});
  EXPECT_TRUE(all_close(host(decode_attention(dev(q), dev(k), dev(v), H, Tensor(), 0.0, nullptr,
                                              Tensor(), dev(fine))),
                        decode_attention(q, k, v, H, Tensor(), 0.0, nullptr, Tensor(), fine), 1e-5,
                        1e-6));
}

TEST_F(CudaOps, InitAndDivideAreBitwiseTheCpus) {
  Tensor a = Tensor::empty({7, 33}), da = Tensor::empty({7, 33}, DType::f32, Device::cuda);
  Generator g1(5), g2(5);
  xavier_uniform_(a, g1);
  xavier_uniform_(da, g2);
  normal_(a, 0.0, 0.3, g1);
  normal_(da, 0.0, 0.3, g2);
  EXPECT_TRUE(bitwise_equal(to_device(da, Device::cpu), a));
  div_(a, 3.0);
  div_(da, 3.0);
  EXPECT_TRUE(bitwise_equal(to_device(da, Device::cpu), a));
}

TEST_F(CudaOps, MixedDevicesAndF64AreClearErrors) {
  const Tensor a = random_tensor({4}, DType::f32, 1);
  const Tensor da = to_device(a, Device::cuda);
  EXPECT_TFM_ERROR(add(a, da), "add: tensors on different devices");
  EXPECT_TFM_ERROR(relu(to_device(random_tensor({4}, DType::f64, 2), Device::cuda)),
                   "the CUDA kernels take f32");
}

}  // namespace
}  // namespace tfm
#endif  // TFM_WITH_CUDA
