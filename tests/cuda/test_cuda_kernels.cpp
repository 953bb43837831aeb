// Each CUDA kernel against the CPU kernel it mirrors, on random inputs. Bitwise equality where
// both sides do the same f32 operations in the same order (copies, dropout masks, Adam, embedding
// sums, plain arithmetic); tolerances where the reduction order or the exp/erf implementation
// differs. Every test skips with "no CUDA device" on machines without a GPU.
// Compiled only where tfm_lib has the CUDA backend (TFM_WITH_CUDA); empty otherwise.
#ifdef TFM_WITH_CUDA
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <vector>

#include "support/test_util.h"
#include "tfm/core/autograd_meta.h"
#include "tfm/core/cuda/runtime.h"
#include "tfm/core/device_copy.h"
#include "tfm/core/rng.h"
#include "tfm/ops/cpu/activation_cpu.h"
#include "tfm/ops/cpu/attention_cpu.h"
#include "tfm/ops/cpu/cross_entropy_cpu.h"
#include "tfm/ops/cpu/dropout_cpu.h"
#include "tfm/ops/cpu/elementwise_cpu.h"
#include "tfm/ops/cpu/embedding_cpu.h"
#include "tfm/ops/cpu/layer_norm_cpu.h"
#include "tfm/ops/cpu/linear_cpu.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/cpu/primitives.h"
#include "tfm/ops/cpu/softmax_cpu.h"
#include "tfm/ops/cuda/adam.h"
#include "tfm/ops/cuda/attention.h"
#include "tfm/ops/cuda/cross_entropy.h"
#include "tfm/ops/cuda/dropout.h"
#include "tfm/ops/cuda/elementwise.h"
#include "tfm/ops/cuda/embedding.h"
#include "tfm/ops/cuda/gemm.h"
#include "tfm/ops/cuda/layer_norm.h"
#include "tfm/ops/cuda/reduce.h"
#include "tfm/ops/cuda/softmax.h"
#include "tfm/train/grad_norm.h"
#include "tfm/train/optimizer.h"

namespace tfm {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::random_ids;
using testing::random_tensor;
using testing::scaled_error;

Tensor dev(const Tensor& t) {
  return to_device(t, Device::cuda);
}
Tensor host(const Tensor& t) {
  cuda::synchronize();  // kernel faults surface here, at the test that caused them
  return to_device(t, Device::cpu);
}
Tensor dev_empty(const Shape& s, DType dt = DType::f32) {
  return Tensor::empty(s, dt, Device::cuda);
}
float* f(const Tensor& t) {
  return t.data<float>();
}
double* d(const Tensor& t) {
  return t.data<double>();
}

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::has_device()) GTEST_SKIP() << "no CUDA device: " << cuda::no_device_reason();
  }
};

TEST_F(CudaKernels, ElementwiseArithmeticIsBitwiseTheCpus) {
  const int64_t n = 100003;  // not a multiple of any block size
  const Tensor x = random_tensor({n}, DType::f32, 1, -3, 3), y = random_tensor({n}, DType::f32, 2);
  const Tensor dx = dev(x), dy = dev(y), out = dev_empty({n});
  Tensor ref = Tensor::empty({n});

  cuda::axpby(n, 0.7f, f(dx), -1.3f, f(dy), f(out));
  cpu::axpby(n, 0.7f, f(x), -1.3f, f(y), f(ref));
  EXPECT_TRUE(bitwise_equal(host(out), ref)) << "axpby";
  cuda::mul(n, f(dx), f(dy), f(out));
  cpu::mul(n, f(x), f(y), f(ref));
  EXPECT_TRUE(bitwise_equal(host(out), ref)) << "mul";
  cuda::scale(n, 0.125f, f(dx), f(out));
  cpu::scale(n, 0.125f, f(x), f(ref));
  EXPECT_TRUE(bitwise_equal(host(out), ref)) << "scale";
  cuda::scale(n, 2.0f, f(dx), f(dx));  // in place
  EXPECT_TRUE(bitwise_equal(host(dx), [&] {
    Tensor r = Tensor::empty({n});
    cpu::scale(n, 2.0f, f(x), f(r));
    return r;
  }()));
}

TEST_F(CudaKernels, ActivationsMatchTheCpu) {
  const int64_t n = 65537;
  const Tensor x = random_tensor({n}, DType::f32, 3, -5, 5), gy = random_tensor({n}, DType::f32, 4);
  const Tensor dx = dev(x), dgy = dev(gy), out = dev_empty({n}), grad = dev_empty({n});
  Tensor ref = Tensor::empty({n}), ref_g = Tensor::empty({n});

  cuda::relu_forward(n, f(dx), f(out));
  cpu::relu_forward(n, f(x), f(ref));
  EXPECT_TRUE(bitwise_equal(host(out), ref)) << "relu";
  cuda::relu_backward(n, f(dgy), f(out), f(grad));
  cpu::relu_backward(n, f(gy), f(ref), f(ref_g));
  EXPECT_TRUE(bitwise_equal(host(grad), ref_g)) << "relu backward";

  // CPU f32 GELU uses the A&S erfc approximation (|error| < 1.5e-7 on Φ); CUDA's normcdff is
  // near correctly rounded. Compare both with the f64 exact GELU.
  const Tensor x64 = x.to(DType::f64), gy64 = gy.to(DType::f64);
  Tensor r64 = Tensor::empty({n}, DType::f64), rg64 = Tensor::empty({n}, DType::f64);
  cpu::gelu_forward(n, d(x64), d(r64));
  cpu::gelu_backward(n, d(gy64), d(x64), d(rg64));
  cuda::gelu_forward(n, f(dx), f(out));
  cuda::gelu_backward(n, f(dgy), f(dx), f(grad));
  cpu::gelu_forward(n, f(x), f(ref));
  EXPECT_TRUE(all_close(host(out).to(DType::f64), r64, 1e-6, 1e-6)) << "gelu vs f64";
  EXPECT_TRUE(all_close(host(out), ref, 1e-6, 1e-6)) << "gelu vs cpu f32";
  EXPECT_TRUE(all_close(host(grad).to(DType::f64), rg64, 1e-6, 1e-6)) << "gelu backward";
}

TEST_F(CudaKernels, ColumnSums) {
  // One chunk of rows, several, a partial last chunk, a batch's worth of token rows, none.
  for (int64_t m : {int64_t{40}, int64_t{333}, int64_t{16411}, int64_t{0}}) {
    SCOPED_TRACE("rows " + std::to_string(m));
    const int64_t n = 515;
    const Tensor a = random_tensor({m, n}, DType::f32, 5);
    const Tensor out = dev_empty({n});
    Tensor ref = Tensor::empty({n});
    cuda::column_sums(m, n, f(dev(a)), f(out));
    cpu::column_sums(m, n, f(a), f(ref));
    // Both sum in double (the GPU by 64-row chunks, then the chunks), which holds such sums
    // exactly or within an f32 rounding's millionth: the same f32 bits.
    EXPECT_TRUE(bitwise_equal(host(out), ref));
  }
}

TEST_F(CudaKernels, LayerNormForwardAndBackward) {
  for (int64_t c : {int64_t{7}, int64_t{300}, int64_t{4100}}) {
    SCOPED_TRACE("C = " + std::to_string(c));
    const int64_t n = 67;
    // A large mean next to a small spread: the case the hi/lo mean split exists for.
    const Tensor x = random_tensor({n, c}, DType::f32, 10, 99, 101);
    const Tensor res = random_tensor({n, c}, DType::f32, 11);
    const Tensor gamma = random_tensor({c}, DType::f32, 12, 0.5, 1.5);
    const Tensor beta = random_tensor({c}, DType::f32, 13);
    const Tensor dy = random_tensor({n, c}, DType::f32, 14);
    const Tensor extra = random_tensor({n, c}, DType::f32, 15);
    const double eps = 1e-5;

    Tensor y = Tensor::empty({n, c}), sum = Tensor::empty({n, c});
    Tensor mean = Tensor::empty({n}, DType::f64), rstd = Tensor::empty({n}, DType::f64);
    cpu::add_layer_norm_forward(n, c, f(x), f(res), f(gamma), f(beta), eps, f(sum), f(y), d(mean),
                                d(rstd));
    const Tensor gx = dev(x), gres = dev(res), ggamma = dev(gamma), gbeta = dev(beta);
    const Tensor gy = dev_empty({n, c}), gsum = dev_empty({n, c});
    const Tensor gmean = dev_empty({n}, DType::f64), grstd = dev_empty({n}, DType::f64);
    cuda::add_layer_norm_forward(n, c, f(gx), f(gres), f(ggamma), f(gbeta), eps, f(gsum), f(gy),
                                 d(gmean), d(grstd));
    EXPECT_TRUE(bitwise_equal(host(gsum), sum));
    EXPECT_TRUE(all_close(host(gmean), mean, 1e-12, 1e-12));
    EXPECT_TRUE(all_close(host(grstd), rstd, 1e-9, 0));
    EXPECT_TRUE(all_close(host(gy), y, 1e-5, 1e-5));

    // Plain layer norm of the same rows gives the same y.
    const Tensor gy2 = dev_empty({n, c});
    cuda::layer_norm_forward(n, c, f(gsum), f(ggamma), f(gbeta), eps, f(gy2), d(gmean), d(grstd));
    EXPECT_TRUE(bitwise_equal(host(gy2), host(gy)));

    Tensor dx = Tensor::empty({n, c}), dg = Tensor::empty({c}), db = Tensor::empty({c});
    Tensor ws = Tensor::empty({cpu::layer_norm_backward_workspace(n, c)});
    cpu::layer_norm_backward(n, c, f(dy), f(sum), d(mean), d(rstd), f(gamma), f(extra), f(dx),
                             f(dg), f(db), f(ws));
    const Tensor gdx = dev_empty({n, c}), gdg = dev_empty({c}), gdb = dev_empty({c});
    cuda::layer_norm_backward(n, c, f(dev(dy)), f(gsum), d(gmean), d(grstd), f(ggamma),
                              f(dev(extra)), f(gdx), f(gdg), f(gdb));
    EXPECT_LT(scaled_error(host(gdx), dx), 1e-5);
    EXPECT_LT(scaled_error(host(gdg), dg), 1e-5);
    EXPECT_LT(scaled_error(host(gdb), db), 1e-6);
    // dx alone, no extra.
    cpu::layer_norm_backward<float>(n, c, f(dy), f(sum), d(mean), d(rstd), f(gamma), nullptr, f(dx),
                                    nullptr, nullptr, nullptr);
    cuda::layer_norm_backward(n, c, f(dev(dy)), f(gsum), d(gmean), d(grstd), f(ggamma), nullptr,
                              f(gdx), nullptr, nullptr);
    EXPECT_LT(scaled_error(host(gdx), dx), 1e-5);
  }
}

TEST_F(CudaKernels, SoftmaxAndLogSoftmax) {
  for (int64_t c : {int64_t{5}, int64_t{1000}, int64_t{32003}}) {
    SCOPED_TRACE("C = " + std::to_string(c));
    const int64_t n = 19;
    const Tensor x = random_tensor({n, c}, DType::f32, 16, -20, 20);
    const Tensor dy = random_tensor({n, c}, DType::f32, 17);
    const Tensor gx = dev(x), gdy = dev(dy);
    Tensor y = Tensor::empty({n, c}), dx = Tensor::empty({n, c});
    const Tensor gy = dev_empty({n, c}), gdx = dev_empty({n, c});

    cpu::softmax_forward(n, c, f(x), f(y));
    cuda::softmax_forward(n, c, f(gx), f(gy));
    EXPECT_TRUE(all_close(host(gy), y, 1e-5, 1e-7)) << "softmax";
    // The backward from the same y on both sides isolates the backward kernel.
    const Tensor ycpu = dev(y);
    cpu::softmax_backward(n, c, f(dy), f(y), f(dx));
    cuda::softmax_backward(n, c, f(gdy), f(ycpu), f(gdx));
    EXPECT_LT(scaled_error(host(gdx), dx), 1e-6) << "softmax backward";

    cpu::log_softmax_forward(n, c, f(x), f(y));
    cuda::log_softmax_forward(n, c, f(gx), f(gy));
    EXPECT_TRUE(all_close(host(gy), y, 1e-6, 1e-5)) << "log_softmax";
    cpu::log_softmax_backward(n, c, f(dy), f(y), f(dx));
    cuda::log_softmax_backward(n, c, f(gdy), f(dev(y)), f(gdx));
    EXPECT_LT(scaled_error(host(gdx), dx), 1e-5) << "log_softmax backward";
  }
}

TEST_F(CudaKernels, CrossEntropyWithSmoothingAndIgnoredRows) {
  const int64_t n = 70, v = 3001, ignore = -100;
  const Tensor logits = random_tensor({n, v}, DType::f32, 20, -8, 8);
  std::vector<int32_t> t = random_ids({n}, v, 21).to_vector<int32_t>();
  for (int64_t i = 0; i < n; i += 7) t[i] = static_cast<int32_t>(ignore);
  // A row whose target holds a tied maximum after an earlier equal logit: not "correct".
  std::vector<float> lv = logits.to_vector<float>();
  lv[1 * v + 5] = 50.0f;
  lv[1 * v + 9] = 50.0f;
  t[1] = 9;
  lv[2 * v + 4] = 60.0f;  // and one that is correct
  t[2] = 4;
  const Tensor lg = Tensor::from_vector<float>({n, v}, lv);
  const Tensor tg = Tensor::from_vector<int32_t>({n}, t);

  for (double smoothing : {0.0, 0.1}) {
    SCOPED_TRACE("smoothing " + std::to_string(smoothing));
    Tensor rmax = Tensor::empty({n}), rls = Tensor::empty({n});
    const cpu::CrossEntropyTotals ref = cpu::cross_entropy_forward(
        n, v, f(lg), tg.data<int32_t>(), ignore, smoothing, f(rmax), f(rls));
    const Tensor glg = dev(lg), gtg = dev(tg), gmax = dev_empty({n}), gls = dev_empty({n});
    const cuda::CrossEntropyTotals got = cuda::cross_entropy_forward(
        n, v, f(glg), gtg.data<int32_t>(), ignore, smoothing, f(gmax), f(gls));
    EXPECT_EQ(got.tokens, ref.tokens);
    EXPECT_EQ(got.correct, ref.correct);
    EXPECT_NEAR(got.loss_sum, ref.loss_sum, 1e-6 * std::abs(ref.loss_sum));
    EXPECT_NEAR(got.nll_sum, ref.nll_sum, 1e-6 * std::abs(ref.nll_sum));
    EXPECT_TRUE(bitwise_equal(host(gmax), rmax));
    EXPECT_TRUE(all_close(host(gls), rls, 1e-6, 1e-6));

    const double scale = 1.0 / static_cast<double>(ref.tokens);
    Tensor dl = Tensor::empty({n, v});
    cpu::cross_entropy_backward(n, v, f(lg), tg.data<int32_t>(), ignore, smoothing, f(rmax), f(rls),
                                scale, f(dl));
    const Tensor gdl = dev_empty({n, v});
    cuda::cross_entropy_backward(n, v, f(glg), gtg.data<int32_t>(), ignore, smoothing, f(gmax),
                                 f(gls), scale, f(gdl));
    EXPECT_LT(scaled_error(host(gdl), dl), 1e-5);
  }
}

TEST_F(CudaKernels, EmbeddingForwardAndDeterministicBackward) {
  const int64_t n = 500, v = 97, c = 300, pad = 3;
  std::vector<int32_t> ids = random_ids({n}, v, 30).to_vector<int32_t>();
  for (int64_t i = 0; i < n; i += 11) ids[i] = static_cast<int32_t>(pad);
  const Tensor tid = Tensor::from_vector<int32_t>({n}, ids);
  const Tensor w = random_tensor({v, c}, DType::f32, 31);
  const Tensor g = random_tensor({n, c}, DType::f32, 32);

  Tensor out = Tensor::empty({n, c});
  cpu::embedding_forward(n, tid.data<int32_t>(), c, f(w), f(out));
  const Tensor gid = dev(tid), gout = dev_empty({n, c});
  cuda::embedding_forward(n, gid.data<int32_t>(), v, c, f(dev(w)), f(gout));
  EXPECT_TRUE(bitwise_equal(host(gout), out));

  Tensor gw = Tensor::empty({v, c});
  cpu::embedding_backward(n, tid.data<int32_t>(), v, c, pad, f(g), f(gw));
  const Tensor ggw = dev_empty({v, c});
  cuda::embedding_backward(n, gid.data<int32_t>(), v, c, pad, f(dev(g)), f(ggw));
  // Each row summed in position order on both sides: the same bits.
  EXPECT_TRUE(bitwise_equal(host(ggw), gw));

  ids[17] = static_cast<int32_t>(v);
  const Tensor bad = dev(Tensor::from_vector<int32_t>({n}, ids));
  const std::string m = testing::error_of(
      [&] { cuda::embedding_backward(n, bad.data<int32_t>(), v, c, pad, f(dev(g)), f(ggw)); });
  EXPECT_NE(m.find("id 97 at position 17"), std::string::npos) << m;
}

TEST_F(CudaKernels, DropoutMaskIsTheCpusBitForBit) {
  for (int64_t n : {int64_t{1}, int64_t{1003}, int64_t{1} << 20}) {
    for (double p : {0.1, 0.5}) {
      const Tensor x = random_tensor({n}, DType::f32, 40);
      const RandomStream rng(1234567890123ull, 77);
      Tensor ref = Tensor::empty({n});
      cpu::dropout_apply(n, f(x), rng, p, f(ref));
      const Tensor out = dev_empty({n});
      cuda::dropout_apply(n, f(dev(x)), rng, p, f(out));
      EXPECT_TRUE(bitwise_equal(host(out), ref)) << "n " << n << " p " << p;
    }
  }
  // A different stream id gives a different mask.
  const int64_t n = 4096;
  const Tensor x = Tensor::ones({n});
  const Tensor a = dev_empty({n}), b = dev_empty({n});
  cuda::dropout_apply(n, f(dev(x)), RandomStream(1, 0), 0.5, f(a));
  cuda::dropout_apply(n, f(dev(x)), RandomStream(1, 1), 0.5, f(b));
  EXPECT_FALSE(bitwise_equal(host(a), host(b)));
}

TEST_F(CudaKernels, FusedAdamIsTheCpuOptimizerBitForBit) {
  for (bool decoupled : {false, true}) {
    SCOPED_TRACE(decoupled ? "AdamW" : "Adam");
    const int64_t n = 10007;
    AdamOptions opt;
    opt.lr = 3e-3;
    opt.weight_decay = 0.01;
    opt.decoupled = decoupled;
    Tensor p = random_tensor({n}, DType::f32, 50);
    const Tensor gp = dev(p), gm = Tensor::zeros({n}, DType::f32, Device::cuda),
                 gv = Tensor::zeros({n}, DType::f32, Device::cuda);
    p.set_requires_grad(true);
    Adam adam({{"p", p}}, opt);
    for (int64_t step = 1; step <= 4; ++step) {
      const Tensor g = random_tensor({n}, DType::f32, 60 + step);
      p.autograd_meta()->grad = g;
      const double lr = opt.lr * static_cast<double>(step) / 4.0, gs = 0.5;
      adam.step(lr, gs);
      cuda::adam_step(n, f(gp), f(dev(g)), f(gm), f(gv),
                      kernels::adam_update_for_step(step, lr, opt.beta1, opt.beta2, opt.eps,
                                                    opt.weight_decay, decoupled, gs));
      EXPECT_TRUE(bitwise_equal(host(gp), p.detach())) << "step " << step;
    }
    const auto state = adam.state();
    for (const auto& [name, t] : state) {
      const bool is_m = name.rfind("m.", 0) == 0;
      EXPECT_TRUE(bitwise_equal(host(is_m ? gm : gv), t)) << name;
    }
  }
}

TEST_F(CudaKernels, MultiTensorAdamIsTheCpuOptimizerBitForBit) {
  AdamOptions opt;
  opt.lr = 1e-3;
  opt.weight_decay = 0.1;
  opt.decoupled = true;
  const std::vector<int64_t> sizes = {1, 4095, 4096, 4097, 100000, 0, 3};
  std::vector<std::pair<std::string, Tensor>> params;
  std::vector<Tensor> gp, gm, gv;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Tensor p = random_tensor({sizes[k]}, DType::f32, 110 + k);
    gp.push_back(dev(p));
    gm.push_back(Tensor::zeros({sizes[k]}, DType::f32, Device::cuda));
    gv.push_back(Tensor::zeros({sizes[k]}, DType::f32, Device::cuda));
    p.set_requires_grad(true);
    params.emplace_back(std::string("p") += std::to_string(k), p);
  }
  Adam adam(params, opt);
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<Tensor> dg;  // kept alive until the step has run
    std::vector<cuda::AdamTensor> list;
    for (size_t k = 0; k < sizes.size(); ++k) {
      const Tensor g = random_tensor({sizes[k]}, DType::f32, 200 + 10 * step + k);
      params[k].second.autograd_meta()->grad = g;
      dg.push_back(dev(g));
      list.push_back({sizes[k], f(gp[k]), f(dg.back()), f(gm[k]), f(gv[k])});
    }
    adam.step(opt.lr, 1.0);
    cuda::adam_step_multi(list,
                          kernels::adam_update_for_step(step, opt.lr, opt.beta1, opt.beta2, opt.eps,
                                                        opt.weight_decay, true, 1.0));
    for (size_t k = 0; k < sizes.size(); ++k)
      EXPECT_TRUE(bitwise_equal(host(gp[k]), params[k].second.detach()))
          << "step " << step << " tensor " << k;
  }
}

TEST_F(CudaKernels, GlobalGradNormMatchesTheTrainers) {
  std::vector<std::pair<std::string, Tensor>> params;
  std::vector<Tensor> grads;
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{300001}, int64_t{5} << 20}) {
    Tensor p = Tensor::zeros({n});
    p.set_requires_grad(true);
    grads.push_back(random_tensor({n}, DType::f32, 100 + n, -3, 3));
    p.autograd_meta()->grad = grads.back();
    std::string name = "p";  // not "p" + ...: GCC 12 warns (-Wrestrict) on that
    name += std::to_string(n);
    params.emplace_back(name, p);
  }
  const double ref = global_grad_norm(params);
  const Tensor acc = Tensor::zeros({1}, DType::f64, Device::cuda);
  for (const Tensor& g : grads) cuda::accumulate_sum_of_squares(g.numel(), f(dev(g)), d(acc));
  const double got = std::sqrt(host(acc).item());
  EXPECT_NEAR(got, ref, 1e-12 * ref);
  const Tensor g0 = dev(grads[2]);
  EXPECT_EQ(cuda::sum_of_squares(g0.numel(), f(g0)), cuda::sum_of_squares(g0.numel(), f(g0)));
  // A non-finite gradient makes the norm non-finite, as on the CPU.
  std::vector<float> bad(100, 1.0f);
  bad[37] = std::numeric_limits<float>::infinity();
  const Tensor gb = dev(Tensor::from_vector<float>({100}, bad));
  EXPECT_FALSE(std::isfinite(cuda::sum_of_squares(100, f(gb))));
}

TEST_F(CudaKernels, GemmAllTransposesAgainstF64) {
  const int64_t m = 67, n = 45, k = 129;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("trans_a ") + (ta ? "1" : "0") + " trans_b " + (tb ? "1" : "0"));
      const Shape sa = ta ? Shape{k, m} : Shape{m, k}, sb = tb ? Shape{n, k} : Shape{k, n};
      const Tensor a = random_tensor(sa, DType::f32, 70), b = random_tensor(sb, DType::f32, 71);
      const Tensor c0 = random_tensor({m, n}, DType::f32, 72);
      const int64_t lda = sa[1], ldb = sb[1];
      Tensor ref = c0.to(DType::f64);
      const Tensor a64 = a.to(DType::f64), b64 = b.to(DType::f64);
      cpu::gemm<double>(ta, tb, m, n, k, 0.5, d(a64), lda, d(b64), ldb, -2.0, d(ref), n);
      const Tensor gc = dev(c0);
      cuda::gemm(ta, tb, m, n, k, 0.5f, f(dev(a)), lda, f(dev(b)), ldb, -2.0f, f(gc), n);
      EXPECT_LT(scaled_error(host(gc).to(DType::f64), ref), 1e-6);
    }
  }
  // Operands one element past an allocation (4-byte aligned views) and a second call that finds
  // the cached plan: same result, bit for bit.
  {
    const Tensor a = random_tensor({m * k + 1}, DType::f32, 73);
    const Tensor b = random_tensor({k * n + 1}, DType::f32, 74);
    Tensor ref = Tensor::zeros({m, n}, DType::f64);
    const Tensor a64 = a.to(DType::f64), b64 = b.to(DType::f64);
    cpu::gemm<double>(false, false, m, n, k, 1.0, d(a64) + 1, k, d(b64) + 1, n, 0.0, d(ref), n);
    const Tensor ga = dev(a), gb = dev(b);
    const Tensor c = dev_empty({m * n + 1}), c2 = dev_empty({m * n + 1});
    cuda::gemm(false, false, m, n, k, 1.0f, f(ga) + 1, k, f(gb) + 1, n, 0.0f, f(c) + 1, n);
    cuda::gemm(false, false, m, n, k, 1.0f, f(ga) + 1, k, f(gb) + 1, n, 0.0f, f(c2) + 1, n);
    const Tensor hc = host(c);
    EXPECT_LT(scaled_error(hc.slice(1, m * n + 1).reshape({m, n}).to(DType::f64), ref), 1e-6);
    EXPECT_TRUE(bitwise_equal(hc.slice(1, m * n + 1), host(c2).slice(1, m * n + 1)));
  }
  EXPECT_NE(testing::error_of([] {
              cuda::gemm(false, false, 2, 2, 2, 1.0f, nullptr, 1, nullptr, 2, 0.0f, nullptr, 2);
            }).find("leading dimensions"),
            std::string::npos);
}

TEST_F(CudaKernels, ActivationsAndBackward) {
  const int64_t m = 100, n = 70, k = 90;
  const Tensor x = random_tensor({m, k}, DType::f32, 80), w = random_tensor({n, k}, DType::f32, 81);
  const Tensor bias = random_tensor({n}, DType::f32, 82);
  const Tensor gx = dev(x), gw = dev(w), gb = dev(bias);
  const struct {
    Activation cpu_act;
    Activation cuda_act;
    bool with_bias;
  } cases[] = {{Activation::none, Activation::none, false},
               {Activation::none, Activation::none, true},
               {Activation::relu, Activation::relu, true},
               {Activation::relu, Activation::relu, false},
               {Activation::gelu, Activation::gelu, true}};
  for (const auto& cs : cases) {
    SCOPED_TRACE(std::string(activation_name(cs.cpu_act)) + (cs.with_bias ? " +bias" : ""));
    Tensor ref = Tensor::empty({m, n});
    cpu::linear_forward<float>(m, n, k, f(x), f(w), cs.with_bias ? f(bias) : nullptr, cs.cpu_act,
                               f(ref));
    const Tensor gy = dev_empty({m, n});
    cuda::linear_forward(m, n, k, f(gx), f(gw), cs.with_bias ? f(gb) : nullptr, cs.cuda_act, f(gy));
    EXPECT_LT(scaled_error(host(gy), ref), 1e-5);
  }
  const Tensor dz = random_tensor({m, n}, DType::f32, 83);
  Tensor dx = Tensor::empty({m, k}), dw = Tensor::empty({n, k}), db = Tensor::empty({n});
  cpu::linear_backward<float>(m, n, k, f(dz), f(x), f(w), f(dx), f(dw), f(db));
  const Tensor gdx = dev_empty({m, k}), gdw = dev_empty({n, k}), gdb = dev_empty({n});
  cuda::linear_backward(m, n, k, f(dev(dz)), f(gx), f(gw), f(gdx), f(gdw), f(gdb));
  EXPECT_LT(scaled_error(host(gdx), dx), 1e-5);
  EXPECT_LT(scaled_error(host(gdw), dw), 1e-5);
  EXPECT_LT(scaled_error(host(gdb), db), 1e-6);
}

// bf16 roundings of x (a CPU f32 tensor), as a CPU bf16 tensor and as f64 values.
Tensor to_bf16(const Tensor& x) {
  Tensor r = Tensor::empty(x.shape(), DType::bf16);
  cpu::float_to_bf16(x.numel(), f(x), static_cast<uint16_t*>(r.raw_data()));
  return r;
}
Tensor bf16_values(const Tensor& x) {
  Tensor r = Tensor::empty(x.shape(), DType::f64);
  for (int64_t i = 0; i < x.numel(); ++i) d(r)[i] = testing::round_bf16(f(x)[i]);
  return r;
}
const uint16_t* h(const Tensor& t) {
  return static_cast<const uint16_t*>(t.raw_data());
}

TEST_F(CudaKernels, Bf16RoundingIsTheCpusBitForBit) {
  // Random values over many binades, then the cases rounding decides: ties to even both ways,
  // the largest finite values (rounding up to infinity), subnormals, signed zeros, inf, NaN.
  std::vector<float> v;
  RandomStream rs(5, 1);
  for (int i = 0; i < 20000; ++i) {
    const double u = rs.uniform(static_cast<uint64_t>(i)) - 0.5;
    v.push_back(static_cast<float>(u * std::ldexp(1.0, i % 60 - 30)));
  }
  for (uint32_t bits :
       {0x3F808000u, 0x3F818000u, 0x3F80FFFFu, 0x3F807FFFu, 0x7F7FFFFFu, 0x7F7F8000u, 0xFF7FFFFFu,
        0x00000001u, 0x00018000u, 0x80000000u, 0x00000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
        0x7F800001u, 0xFFC00001u}) {
    float x;
    std::memcpy(&x, &bits, 4);
    v.push_back(x);
  }
  const auto n = static_cast<int64_t>(v.size());
  const Tensor x = Tensor::from_vector<float>({n}, v);
  const Tensor want = to_bf16(x);
  const Tensor got = dev_empty({n}, DType::bf16);
  cuda::float_to_bf16(n, f(dev(x)), static_cast<uint16_t*>(got.raw_data()));
  EXPECT_TRUE(bitwise_equal(host(got), want));
}

// bf16 GEMMs (mixed precision): the exact products of the rounded operands, summed in f32, so
// against an f64 GEMM of the rounded values; and the linear kernels against the CPU's.
TEST_F(CudaKernels, Bf16GemmAndLinearMatchTheRoundedOperands) {
  const int64_t m = 67, n = 45, k = 129;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("trans_a ") + (ta ? "1" : "0") + " trans_b " + (tb ? "1" : "0"));
      const Shape sa = ta ? Shape{k, m} : Shape{m, k}, sb = tb ? Shape{n, k} : Shape{k, n};
      const Tensor a = random_tensor(sa, DType::f32, 170), b = random_tensor(sb, DType::f32, 171);
      const Tensor c0 = random_tensor({m, n}, DType::f32, 172);
      Tensor ref = c0.to(DType::f64);
      cpu::gemm<double>(ta, tb, m, n, k, 0.5, d(bf16_values(a)), sa[1], d(bf16_values(b)), sb[1],
                        -2.0, d(ref), n);
      const Tensor gc = dev(c0);
      const Tensor ga = dev(to_bf16(a)), gb = dev(to_bf16(b));
      cuda::gemm_bf16(ta, tb, m, n, k, 0.5f, h(ga), sa[1], h(gb), sb[1], -2.0f, f(gc), n);
      EXPECT_LT(scaled_error(host(gc).to(DType::f64), ref), 1e-6);
      // Not the f32 GEMM: the roundings show at this tolerance.
      Tensor f32_ref = c0.to(DType::f64);
      cpu::gemm<double>(ta, tb, m, n, k, 0.5, d(a.to(DType::f64)), sa[1], d(b.to(DType::f64)),
                        sb[1], -2.0, d(f32_ref), n);
      EXPECT_GT(scaled_error(host(gc).to(DType::f64), f32_ref), 1e-4);
    }
  }
  // A view one bf16 element (2 bytes) past an allocation.
  {
    const Tensor a = random_tensor({m * k + 1}, DType::f32, 173);
    const Tensor b = random_tensor({k * n + 1}, DType::f32, 174);
    Tensor ref = Tensor::zeros({m, n}, DType::f64);
    cpu::gemm<double>(false, false, m, n, k, 1.0, d(bf16_values(a)) + 1, k, d(bf16_values(b)) + 1,
                      n, 0.0, d(ref), n);
    const Tensor ga = dev(to_bf16(a)), gb = dev(to_bf16(b));
    const Tensor c = dev_empty({m, n});
    cuda::gemm_bf16(false, false, m, n, k, 1.0f, h(ga) + 1, k, h(gb) + 1, n, 0.0f, f(c), n);
    EXPECT_LT(scaled_error(host(c).to(DType::f64), ref), 1e-6);
  }

  const int64_t rows = 100, out = 70, in = 90;
  const Tensor x = random_tensor({rows, in}, DType::f32, 180);
  const Tensor w = random_tensor({out, in}, DType::f32, 181);
  const Tensor bias = random_tensor({out}, DType::f32, 182);
  const Tensor xb = to_bf16(x), wb = to_bf16(w);
  const Tensor gxb = dev(xb), gwb = dev(wb), gbias = dev(bias);
  for (Activation act : {Activation::none, Activation::relu, Activation::gelu, Activation::silu,
                         Activation::gelu_tanh}) {
    for (bool with_bias : {false, true}) {
      SCOPED_TRACE(std::string(activation_name(act)) + (with_bias ? " +bias" : ""));
      Tensor ref = Tensor::empty({rows, out});
      cpu::linear_forward_bf16(rows, out, in, h(xb), h(wb), with_bias ? f(bias) : nullptr, act,
                               f(ref));
      const Tensor gy = dev_empty({rows, out});
      cuda::linear_forward_bf16(rows, out, in, h(gxb), h(gwb), with_bias ? f(gbias) : nullptr, act,
                                f(gy));
      EXPECT_LT(scaled_error(host(gy), ref), 1e-5);
    }
  }
  const Tensor dz = random_tensor({rows, out}, DType::f32, 183);
  Tensor dx = Tensor::empty({rows, in}), dw = Tensor::empty({out, in}), db = Tensor::empty({out});
  cpu::linear_backward_bf16(rows, out, in, f(dz), h(xb), h(wb), f(dx), f(dw), f(db));
  const Tensor gdx = dev_empty({rows, in}), gdw = dev_empty({out, in}), gdb = dev_empty({out});
  cuda::linear_backward_bf16(rows, out, in, f(dev(dz)), h(gxb), h(gwb), f(gdx), f(gdw), f(gdb));
  EXPECT_LT(scaled_error(host(gdx), dx), 1e-5);
  EXPECT_LT(scaled_error(host(gdw), dw), 1e-5);
  EXPECT_TRUE(bitwise_equal(host(gdb), db));  // the f32 dz's column sums, in double, in order
}

// Compares lse allowing the +inf of rows that see no key.
::testing::AssertionResult lse_close(const Tensor& a, const Tensor& b) {
  const auto va = a.to_vector<float>(), vb = b.to_vector<float>();
  for (size_t i = 0; i < va.size(); ++i) {
    if (std::isinf(vb[i]) && va[i] == vb[i]) continue;
    if (!(std::abs(va[i] - vb[i]) <= 1e-5f * (1.0f + std::abs(vb[i]))))
      return ::testing::AssertionFailure() << "lse " << i << ": " << va[i] << " vs " << vb[i];
  }
  return ::testing::AssertionSuccess();
}

TEST_F(CudaKernels, AttentionForwardAndBackwardMatchTheCpu) {
  struct Case {
    int64_t B, H, T, S, D;
    bool causal, padding;
    double dropout;
  };
  const Case cases[] = {
      {2, 3, 37, 45, 40, false, false, 0.0}, {2, 2, 33, 33, 64, true, false, 0.0},
      {3, 2, 20, 70, 128, false, true, 0.0}, {1, 4, 50, 20, 32, true, true, 0.0},  // T > S
      {2, 2, 31, 29, 64, false, true, 0.2},  {1, 1, 1, 200, 16, false, false, 0.0},
  };
  for (const Case& cs : cases) {
    std::ostringstream trace;  // not string +: GCC 12 warns (-Wrestrict) on that chain
    trace << "B" << cs.B << " H" << cs.H << " T" << cs.T << " S" << cs.S << " D" << cs.D
          << (cs.causal ? " causal" : "") << (cs.padding ? " padding" : "") << " dropout "
          << cs.dropout;
    SCOPED_TRACE(trace.str());
    const int64_t C = cs.H * cs.D;
    const Tensor q = random_tensor({cs.B, cs.T, C}, DType::f32, 90, -2, 2);
    const Tensor k = random_tensor({cs.B, cs.S, C}, DType::f32, 91, -2, 2);
    const Tensor v = random_tensor({cs.B, cs.S, C}, DType::f32, 92);
    std::vector<uint8_t> pad(static_cast<size_t>(cs.B * cs.S), 0);
    if (cs.padding) {
      for (int64_t b = 0; b < cs.B; ++b)
        for (int64_t s = cs.S - 1 - 3 * b; s < cs.S; ++s) pad[b * cs.S + s] = 1;
      pad[0] = 1;  // a padded key in front as well
    }
    const Tensor tpad = Tensor::from_vector<uint8_t>({cs.B, cs.S}, pad);
    const Tensor gpad = dev(tpad);

    cpu::AttentionShape shape{cs.B, cs.H, cs.T, cs.S, cs.D};
    cpu::AttentionConfig cfg;
    cfg.scale = 1.0 / std::sqrt(static_cast<double>(cs.D));
    cfg.causal = cs.causal;
    cfg.key_padding_mask = cs.padding ? tpad.data<uint8_t>() : nullptr;
    cfg.dropout = cs.dropout;
    cfg.seed = 99;
    cfg.stream = 5;
    Tensor out = Tensor::empty({cs.B, cs.T, C}), lse = Tensor::empty({cs.B, cs.H, cs.T});
    cpu::attention_forward<float>(shape, cfg, f(q), f(k), f(v), f(out), f(lse), nullptr);

    cuda::AttentionShape gshape{cs.B, cs.H, cs.T, cs.S, cs.D};
    cuda::AttentionConfig gcfg;
    gcfg.scale = cfg.scale;
    gcfg.causal = cs.causal;
    gcfg.key_padding_mask = cs.padding ? gpad.data<uint8_t>() : nullptr;
    gcfg.dropout = cs.dropout;
    gcfg.seed = cfg.seed;
    gcfg.stream = cfg.stream;
    const Tensor gout = dev_empty({cs.B, cs.T, C}), glse = dev_empty({cs.B, cs.H, cs.T});
    cuda::attention_forward(gshape, gcfg, f(dev(q)), f(dev(k)), f(dev(v)), f(gout), f(glse));
    EXPECT_TRUE(all_close(host(gout), out, 1e-4, 2e-5));
    EXPECT_TRUE(lse_close(host(glse), lse));

    // Backward from the forward's own out and lse, on both sides.
    const Tensor gout_in = random_tensor({cs.B, cs.T, C}, DType::f32, 93);
    Tensor dq = Tensor::empty(q.shape()), dk = Tensor::empty(k.shape()),
           dv = Tensor::empty(v.shape());
    cpu::attention_backward<float>(shape, cfg, f(q), f(k), f(v), f(out), f(lse), f(gout_in),
                                   nullptr, nullptr, f(dq), f(dk), f(dv));
    const Tensor gdq = dev_empty(q.shape()), gdk = dev_empty(k.shape()), gdv = dev_empty(v.shape());
    cuda::attention_backward(gshape, gcfg, f(dev(q)), f(dev(k)), f(dev(v)), f(gout), f(glse),
                             f(dev(gout_in)), f(gdq), f(gdk), f(gdv));
    EXPECT_LT(scaled_error(host(gdq), dq), 5e-5);
    EXPECT_LT(scaled_error(host(gdk), dk), 5e-5);
    EXPECT_LT(scaled_error(host(gdv), dv), 5e-5);
  }
}

}  // namespace
}  // namespace tfm

#endif  // TFM_WITH_CUDA
