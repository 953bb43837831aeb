// bf16 and int8 inference on the GPU against the CPU's. int8: the same integers (the input rows'
// quantisation bit for bit, the weights quantised by the CPU's code, exact s32 sums on both
// cuBLASLt's IMMA kernels and tfm's own), so outputs differ only in the last rounding of the
// dequantisation. bf16: the same roundings of both operands, f32 sums in another order. Then a
// model bound to each precision on both devices, and the Translator with device = cuda. Every
// test skips with "no CUDA device" on machines without a GPU.
#ifdef TFM_WITH_CUDA
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/core/cuda/runtime.h"
#include "tfm/core/device_copy.h"
#include "tfm/model/transformer.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/cpu/packed_int8_cpu.h"
#include "tfm/ops/cuda/gemm.h"
#include "tfm/ops/cuda/lowp_linear.h"
#include "tfm/ops/linear.h"
#include "tfm/ops/linear_lowp.h"
#include "tfm/translator.h"

namespace tfm {
namespace {

using testing::random_tensor;
using testing::scaled_error;

Tensor dev(const Tensor& t) {
  return t.defined() ? to_device(t, Device::cuda) : Tensor();
}
Tensor host(const Tensor& t) {
  cuda::synchronize();  // kernel faults surface here, at the test that caused them
  return to_device(t, Device::cpu);
}

class CudaLowp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::has_device()) GTEST_SKIP() << "no CUDA device: " << cuda::no_device_reason();
  }
};

// Rows of every kind: mixed signs, all positive (zero point 0), all negative (255), all zero
// (scale 1), a single huge value (most others quantise to the zero point).
Tensor quantisation_rows(int64_t m, int64_t k, uint64_t seed) {
  Tensor x = random_tensor({m, k}, DType::f32, seed, -3.0, 3.0);
  float* p = x.data<float>();
  for (int64_t j = 0; j < k; ++j) {
    if (m > 1) p[1 * k + j] = std::fabs(p[1 * k + j]) + 0.5f;
    if (m > 2) p[2 * k + j] = -std::fabs(p[2 * k + j]) - 0.25f;
    if (m > 3) p[3 * k + j] = 0.f;
  }
  if (m > 4) p[4 * k + k / 2] = 1e4f;
  return x;
}

TEST_F(CudaLowp, Int8QuantisationOfTheInputIsTheCpusBitForBit) {
  for (int64_t m : {1, 5, 40})
    for (int64_t k : {7, 64, 300}) {
      SCOPED_TRACE(::testing::Message() << "m=" << m << " k=" << k);
      const Tensor x = quantisation_rows(m, k, 10 + m + k);
      const int64_t rows = cuda::int8_padded_rows(m), ldq = cuda::int8_padded(k);
      std::vector<uint8_t> q_cpu(m * k);
      std::vector<float> s_cpu(m);
      std::vector<int32_t> z_cpu(m);
      cpu::quantize_rows_u8(m, k, x.data<float>(), q_cpu.data(), s_cpu.data(), z_cpu.data());
      const Tensor dx = dev(x);
      const Tensor q = Tensor::empty({rows, ldq}, DType::i8, Device::cuda);
      const Tensor s = Tensor::empty({m}, DType::f32, Device::cuda);
      const Tensor z = Tensor::empty({m}, DType::i32, Device::cuda);
      cuda::quantize_rows_s8(m, rows, k, dx.data<float>(), static_cast<int8_t*>(q.raw_data()), ldq,
                             s.data<float>(), z.data<int32_t>());
      const Tensor hq = host(q), hs = host(s), hz = host(z);
      const auto* pq = static_cast<const int8_t*>(hq.raw_data());
      int64_t wrong = 0;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < ldq; ++j) {
          const int want = i < m && j < k ? static_cast<int>(q_cpu[i * k + j]) - 128 : 0;
          wrong += pq[i * ldq + j] != want;
        }
      EXPECT_EQ(wrong, 0) << "of " << rows * ldq << " quantised values (padding included)";
      for (int64_t i = 0; i < m; ++i) {
        EXPECT_EQ(std::memcmp(&hs.data<float>()[i], &s_cpu[i], 4), 0) << "scale of row " << i;
        EXPECT_EQ(hz.data<int32_t>()[i], z_cpu[i]) << "zero point of row " << i;
      }
    }
}

// Σ_k a[i, k] · b[j, k] exactly, in 64-bit integers.
std::vector<int64_t> int_products(int64_t m, int64_t n, int64_t k, const std::vector<int8_t>& a,
                                  const std::vector<int8_t>& b) {
  std::vector<int64_t> c(m * n, 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t q = 0; q < k; ++q) c[i * n + j] += int64_t{a[i * k + q]} * b[j * k + q];
  return c;
}

// The two int8 GEMMs, cuBLASLt's IMMA kernels and tfm's dp4a kernel, against exact integer sums,
// with the extreme values -128 and 127 that saturating instructions would get wrong.
TEST_F(CudaLowp, Int8GemmsAreExact) {
  struct Shape3 {
    int64_t m, n, k;
  };
  for (const Shape3 s : {Shape3{32, 16, 16}, Shape3{48, 96, 320}, Shape3{160, 8016, 512}}) {
    SCOPED_TRACE(::testing::Message() << s.m << "x" << s.n << "x" << s.k);
    std::vector<int8_t> a(s.m * s.k), b(s.n * s.k);
    uint64_t r = 12345 + s.n;
    const auto next = [&] {
      r = r * 6364136223846793005u + 1442695040888963407u;
      return static_cast<int8_t>(static_cast<int>((r >> 33) % 256) - 128);
    };
    for (auto& v : a) v = next();
    for (auto& v : b) v = next();
    for (int64_t q = 0; q < s.k; ++q) a[q] = -128, b[q] = -128;  // row 0 against row 0: 128² K
    const auto want = int_products(s.m, s.n, s.k, a, b);
    const auto upload = [](const std::vector<int8_t>& v, int64_t rows, int64_t cols) {
      Tensor h = Tensor::empty({rows, cols}, DType::i8);
      std::memcpy(h.raw_data(), v.data(), v.size());
      return dev(h);
    };
    const Tensor da = upload(a, s.m, s.k), db = upload(b, s.n, s.k);
    const auto* pa = static_cast<const int8_t*>(da.raw_data());
    const auto* pb = static_cast<const int8_t*>(db.raw_data());
    for (bool lt : {false, true}) {
      SCOPED_TRACE(lt ? "cuBLASLt" : "tfm's dp4a kernel");
      Tensor c = Tensor::full({s.m, s.n}, -1.0, DType::i32, Device::cuda);
      if (lt) {
        const bool ran =
            cuda::gemm_s8_cublaslt(s.m, s.n, s.k, pa, s.k, pb, s.k, c.data<int32_t>(), s.n);
        std::printf("[ int8 ] cuBLASLt IMMA for %lldx%lldx%lld: %s\n", static_cast<long long>(s.m),
                    static_cast<long long>(s.n), static_cast<long long>(s.k),
                    ran ? "yes" : "no algorithm");
        EXPECT_TRUE(ran) << "cuBLASLt offers no int8 algorithm";
        if (!ran) continue;
      } else {
        cuda::gemm_s8_simple(s.m, s.n, s.k, pa, pb, c.data<int32_t>(), s.n);
      }
      const Tensor hc = host(c);
      int64_t wrong = 0;
      for (int64_t e = 0; e < s.m * s.n; ++e) wrong += hc.data<int32_t>()[e] != want[e];
      EXPECT_EQ(wrong, 0) << "of " << s.m * s.n;
    }
  }
}

struct LinearCase {
  int64_t m, n, k;
};
const LinearCase kLinearCases[] = {{1, 40, 64}, {3, 96, 320}, {33, 1001, 256}, {130, 72, 100}};
const Activation kActs[] = {Activation::none, Activation::relu, Activation::gelu, Activation::silu,
                            Activation::gelu_tanh};

// Relative L2 distance ‖a − b‖ / ‖b‖.
double rel_l2(const Tensor& a, const Tensor& b) {
  const auto va = a.to_vector<float>(), vb = b.to_vector<float>();
  double num = 0, den = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    num += (double(va[i]) - vb[i]) * (double(va[i]) - vb[i]);
    den += double(vb[i]) * vb[i];
  }
  return std::sqrt(num / den);
}

// The CPU's int8 linear on tfm's exact-sum kernel (packed_int8_cpu.h): the function oneDNN's
// VNNI path computes too, on any CPU. (The int8 LowpWeight's oneDNN copy is what a VNNI CPU runs;
// on the H200 machine's CPU oneDNN refused it at row counts other than the packing's: a CPU issue
// of its own, which this reference does not depend on.)
Tensor cpu_int8_linear(const Tensor& x, const Tensor& w, const Tensor& b, Activation act,
                       std::vector<float>* scales) {
  const int64_t m = x.size(0), n = w.size(0), k = w.size(1);
  std::vector<int8_t> q(n * k);
  std::vector<int32_t> sums(n);
  scales->resize(n);
  cpu::quantize_weights_s8(n, k, w.data<float>(), q.data(), scales->data(), sums.data());
  const cpu::PackedInt8 packed = cpu::pack_int8(n, k, q.data());
  Tensor y = Tensor::empty({m, n});
  cpu::packed_int8_linear_forward(m, x.data<float>(), packed, scales->data(), sums.data(),
                                  b.defined() ? b.data<float>() : nullptr, act, y.data<float>());
  return y;
}

// The prepared weight on the device against the CPU's, every shape, bias and activation; and the
// output is the precision's, not fp32's (the low-precision error is far above the agreement).
TEST_F(CudaLowp, LinearInBf16AndInt8IsTheCpus) {
  for (ComputeType t : {ComputeType::bfloat16, ComputeType::int8})
    for (const LinearCase& c : kLinearCases)
      for (bool bias : {false, true})
        for (Activation act : kActs) {
          SCOPED_TRACE(::testing::Message()
                       << compute_type_name(t) << " " << c.m << "x" << c.n << "x" << c.k
                       << " bias=" << bias << " act=" << activation_name(act));
          const Tensor x = random_tensor({c.m, c.k}, DType::f32, 200 + c.m, -2.0, 2.0);
          const Tensor w = random_tensor({c.n, c.k}, DType::f32, 300 + c.n, -0.1, 0.1);
          const Tensor b = bias ? random_tensor({c.n}, DType::f32, 400, -0.5, 0.5) : Tensor();
          const LowpWeight on_gpu(dev(w), t);
          EXPECT_EQ(on_gpu.device(), Device::cuda);
          EXPECT_EQ(on_gpu.out_features(), c.n);
          EXPECT_EQ(on_gpu.in_features(), c.k);
          std::vector<float> scales;
          // bf16: tfm's panels (a LowpWeight not packed for sequences), on any CPU.
          const Tensor want = t == ComputeType::int8 ? cpu_int8_linear(x, w, b, act, &scales)
                                                     : linear_lowp(x, LowpWeight(w, t), b, act);
          if (t == ComputeType::int8) {
            ASSERT_EQ(on_gpu.scales().size(), scales.size());
            EXPECT_EQ(std::memcmp(on_gpu.scales().data(), scales.data(), 4 * c.n), 0);
          }
          const Tensor got_dev = linear_lowp(dev(x), on_gpu, dev(b), act);
          EXPECT_EQ(got_dev.device(), Device::cuda);
          const Tensor got = host(got_dev);
          ASSERT_EQ(got.shape(), want.shape());
          // int8: the same integers, one dequantisation rounding (and erf GELU against the CPU's
          // A&S form). bf16: the same operands summed in another order.
          EXPECT_LT(scaled_error(got, want), t == ComputeType::int8 ? 2e-6 : 1e-5);
          const double low_vs_f32 = rel_l2(want, linear(x, w, b, act));
          EXPECT_GT(low_vs_f32, 1e-4);
          EXPECT_LT(rel_l2(got, want), 0.05 * low_vs_f32);
        }
}

TEST_F(CudaLowp, Int8InputWithInfOrNanIsAnErrorAtTheNextCopy) {
  const Tensor w = random_tensor({24, 32}, DType::f32, 7, -0.1, 0.1);
  const LowpWeight lw(dev(w), ComputeType::int8);
  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    Tensor x = random_tensor({5, 32}, DType::f32, 8);
    x.data<float>()[2 * 32 + 3] = bad;
    const Tensor y = linear_lowp(dev(x), lw);  // queued; nothing known yet
    EXPECT_TFM_ERROR(to_device(y, Device::cpu),
                     "int8 linear: row 2 of the input holds inf or NaN (found on the device)");
    EXPECT_TFM_ERROR(linear_lowp(x, LowpWeight(w, ComputeType::int8)), "row 2 of the input");
  }
  // The fault was reported once: later work runs clean.
  const Tensor x = random_tensor({5, 32}, DType::f32, 9);
  EXPECT_LT(
      scaled_error(host(linear_lowp(dev(x), lw)), linear_lowp(x, LowpWeight(w, ComputeType::int8))),
      2e-6);
}

TEST_F(CudaLowp, DeviceWeightsTakeDeviceInputs) {
  const Tensor w = random_tensor({8, 16}, DType::f32, 3);
  const LowpWeight lw(dev(w), ComputeType::bfloat16);
  EXPECT_TFM_ERROR(linear_lowp(random_tensor({2, 16}, DType::f32, 4), lw),
                   "x must be an f32 tensor on cuda, where the weight was prepared");
  EXPECT_TFM_ERROR(linear_lowp(dev(random_tensor({2, 16}, DType::f32, 4)), lw,
                               random_tensor({8}, DType::f32, 5)),
                   "does not match out_features 8 on cuda");
  EXPECT_TFM_ERROR(LowpWeight(dev(w), ComputeType::float32), "nothing to prepare");
  EXPECT_TFM_ERROR(lw.packed(), "no CPU packing");
}

ModelConfig small_config() {
  ModelConfig c = ModelConfig::preset("tiny");
  c.d_model = 64, c.heads = 4, c.d_ff = 128, c.encoder_layers = 2, c.decoder_layers = 2;
  c.dropout = c.attention_dropout = 0.0;
  c.src_vocab_size = c.trg_vocab_size = 61;
  c.tie_output = false;
  c.output_bias = true;
  c.max_length = 64;
  return c;
}

Tensor ids(int64_t b, int64_t l, uint64_t seed) {
  Tensor t = testing::random_ids({b, l}, 58, seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int32_t>()[i] += 3;
  return t;
}

// The whole model bound to bf16 / int8 on the device, the f32 weights released as Translator
// does: logits within the bounds the CPU's own test holds its bf16 / int8 to (test_model_precision:
// scaled error against fp32 under 2e-2 / 5e-2), and not fp32's. (Layer by layer the GPU computes
// the CPU's bf16 and int8: LinearInBf16AndInt8IsTheCpus; whole translations: the Translator test.)
TEST_F(CudaLowp, ModelBoundToLowPrecisionIsWithinTheFormatsBounds) {
  const ModelConfig c = small_config();
  const Tensor src = ids(4, 11, 1), trg = ids(4, 9, 2);
  NoGradGuard no_grad;
  Transformer ref(c, 5);
  const Tensor fp32 = ref.forward(src, trg);
  for (ComputeType t : {ComputeType::bfloat16, ComputeType::int8}) {
    SCOPED_TRACE(compute_type_name(t));
    Transformer gpu(c, 5);
    gpu.to(Device::cuda);
    gpu.bind_inference(t, std::nullopt, /*keep_f32=*/false);
    EXPECT_EQ(gpu.inference_compute(), t);
    EXPECT_EQ(gpu.output_kernel().bound_weight()->device(), Device::cuda);
    const Tensor got = host(gpu.forward(dev(src), dev(trg)));
    const double e = scaled_error(got, fp32);
    std::printf("[ lowp ] %s logits on the GPU: scaled error against fp32 %.3g\n",
                compute_type_name(t), e);
    EXPECT_GT(e, 1e-5);
    EXPECT_LT(e, t == ComputeType::int8 ? 5e-2 : 2e-2);
  }
  // fp32 binds nothing on the device: the parameters' GEMMs, exactly the unbound forward.
  Transformer gpu(c, 5);
  gpu.to(Device::cuda);
  const Tensor unbound = host(gpu.forward(dev(src), dev(trg)));
  EXPECT_LT(scaled_error(unbound, fp32), 1e-5);
  gpu.bind_inference(ComputeType::float32);
  EXPECT_FALSE(gpu.output_kernel().bound());
  EXPECT_TRUE(testing::bitwise_equal(host(gpu.forward(dev(src), dev(trg))), unbound));
}

std::vector<std::vector<int64_t>> fixture_sources(const std::string& dir) {
  std::vector<std::vector<int64_t>> sources;
  std::ifstream in(dir + "/src.ids");
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::vector<int64_t> v;
    for (int64_t x; ls >> x;) v.push_back(x);
    sources.push_back(v);
  }
  return sources;
}

// The Translator front door with device = cuda at each precision against the CPU's Translator at
// the same precision, on a trained fixture model: the same tokens, beam and greedy.
TEST_F(CudaLowp, TranslatorOnTheGpuInBf16AndInt8TranslatesAsTheCpu) {
  const std::string dir = std::string(TFM_FIXTURES_DIR) + "/convert/seed004";
  const auto sources = fixture_sources(dir);
  ASSERT_GT(sources.size(), 3u);
  for (ComputeType t : {ComputeType::bfloat16, ComputeType::int8}) {
    SCOPED_TRACE(compute_type_name(t));
    Translator cpu(dir, {.compute_type = t});
    Translator gpu(dir, {.device = Device::cuda, .compute_type = t, .max_batch_size = 3});
    EXPECT_EQ(gpu.options().compute_type, t);
    for (int64_t beam : {1, 4}) {
      SCOPED_TRACE("beam " + std::to_string(beam));
      TranslationOptions o;
      o.beam_size = beam;
      const auto want = cpu.translate_batch(sources, o);
      const auto got = gpu.translate_batch(sources, o);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].hypotheses[0].ids, want[i].hypotheses[0].ids) << "sentence " << i;
        EXPECT_NEAR(got[i].hypotheses[0].log_prob, want[i].hypotheses[0].log_prob,
                    1e-2 * (1 + std::abs(want[i].hypotheses[0].log_prob)));
      }
    }
  }
  Translator automatic(dir, {.device = Device::cuda, .compute_type = ComputeType::automatic});
  EXPECT_EQ(automatic.options().compute_type, ComputeType::bfloat16);
}

}  // namespace
}  // namespace tfm
#endif  // TFM_WITH_CUDA
