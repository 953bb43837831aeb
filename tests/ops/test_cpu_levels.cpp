// The CPU levels (core/cpu_isa.h) and the kernels chosen by them. Each hand-written kernel is
// compiled for every level it has and picked at run time; these tests run every level this CPU
// (or TFM_CPU_ISA) allows against the floor, AVX2, and the int8 kernel used without VNNI against
// an exact integer reference. scripts/test.sh runs the suite a second time with
// TFM_CPU_ISA=avx2, so an AVX-512 machine checks the AVX2 paths too.
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/core/cpu_isa.h"
#include "tfm/ops/cpu/attention_cpu.h"
#include "tfm/ops/cpu/cross_entropy_cpu.h"
#include "tfm/ops/cpu/decode_attention_cpu.h"
#include "tfm/ops/cpu/dropout_cpu.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/cpu/packed_bf16_cpu.h"
#include "tfm/ops/cpu/packed_f32_cpu.h"
#include "tfm/ops/cpu/packed_int8_cpu.h"
#include "tfm/ops/linear_lowp.h"

namespace tfm {
namespace {

using testing::random_tensor;

const CpuIsa kLevels[] = {CpuIsa::avx2, CpuIsa::avx512, CpuIsa::avx512_vnni, CpuIsa::avx512_bf16};

const Activation kPosts[] = {Activation::none, Activation::relu, Activation::gelu, Activation::silu,
                             Activation::gelu_tanh};

TEST(CpuLevels, NamesParseAndOrder) {
  for (CpuIsa isa : kLevels) EXPECT_EQ(parse_cpu_isa(cpu_isa_name(isa)), isa);
  EXPECT_EQ(parse_cpu_isa("AVX512_BF16"), CpuIsa::avx512_bf16);
  EXPECT_TFM_ERROR(parse_cpu_isa("sse4"), "unknown CPU level 'sse4' (choose avx2, avx512");
  EXPECT_LE(cpu_isa(), detected_cpu_isa());
  EXPECT_EQ(cpu_has_bf16_dot(), cpu_isa() >= CpuIsa::avx512_bf16);
  EXPECT_EQ(cpu_has_vnni(), cpu_isa() >= CpuIsa::avx512_vnni);
  // The summary names the level in use first, and what lowered it when something did.
  const std::string summary = cpu_isa_summary();
  EXPECT_EQ(summary.rfind(cpu_isa_name(cpu_isa()), 0), 0u) << summary;
  EXPECT_EQ(summary.find("detected") != std::string::npos, cpu_isa() != detected_cpu_isa());
}

// The kernel's reading of /proc/cpuinfo, an independent source for what CPUID says.
bool cpuinfo_has(const std::string& line_start, const std::string& word) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(line_start, 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;)
      if (w == word) return true;
    return false;
  }
  return false;
}

// auto precision picks bf16 where bf16 GEMMs outrun f32 ones: AVX512-BF16 in use, and an AMD core
// or AMX (Intel's vdpbf16ps alone multiplies no more a cycle than its two FMA ports).
TEST(CpuLevels, Bf16OutrunsFp32OnAmdOrAmx) {
  if (!std::ifstream("/proc/cpuinfo")) GTEST_SKIP() << "no /proc/cpuinfo to compare with";
  const bool amd = cpuinfo_has("vendor_id", "AuthenticAMD");
  const bool amx = cpuinfo_has("flags", "amx_bf16");
  EXPECT_EQ(cpu_bf16_outruns_fp32(), cpu_has_bf16_dot() && (amd || amx))
      << "AMD " << amd << ", AMX-BF16 " << amx << ", level " << cpu_isa_summary();
}

// Every level's f32 tile adds the same fused multiply-adds in the same order: bit for bit the
// AVX2 result, on shapes that hit the edges of both tile shapes (8 × 48 and 6 × 16).
TEST(CpuLevels, PackedF32IsBitwiseTheSameAtEveryLevel) {
  int compared = 0;
  for (int64_t m : {1, 5, 6, 7, 8, 9, 13, 64})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{1, 3}, {17, 40}, {48, 64}, {100, 129}}) {
      const Tensor x = random_tensor({m, k}, DType::f32, 10 * m + n);
      const Tensor w = random_tensor({n, k}, DType::f32, 11 * m + k);
      const Tensor b = random_tensor({n}, DType::f32, 12 * m + k);
      const cpu::PackedF32 packed = cpu::pack_f32(n, k, w.data<float>());
      for (Activation post : kPosts) {
        Tensor base = Tensor::empty({m, n});
        cpu::packed_f32_linear_forward(m, x.data<float>(), packed, b.data<float>(), post,
                                       base.data<float>(), CpuIsa::avx2);
        for (CpuIsa isa : kLevels) {
          if (isa > cpu_isa()) continue;
          Tensor y = Tensor::empty({m, n});
          cpu::packed_f32_linear_forward(m, x.data<float>(), packed, b.data<float>(), post,
                                         y.data<float>(), isa);
          EXPECT_TRUE(testing::bitwise_equal(y, base)) << cpu_isa_name(isa) << " m=" << m;
          ++compared;
        }
      }
    }
  EXPECT_GE(compared, 8 * 4 * 3);
}

// bf16: the AVX2 tile adds the products in vdpbf16ps' order with fused multiply-adds, so it
// agrees with the instruction bit for bit wherever no subnormal appears (which the instruction
// flushes): the inputs here have none.
TEST(CpuLevels, PackedBf16IsBitwiseTheSameAtEveryLevel) {
  for (int64_t m : {1, 4, 5, 9, 33})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{3, 1}, {20, 33}, {97, 130}}) {
      const Tensor x = random_tensor({m, k}, DType::f32, 20 * m + n, -2.0, 2.0);
      const Tensor w = random_tensor({n, k}, DType::f32, 21 * m + k);
      const Tensor b = random_tensor({n}, DType::f32, 22 * m + k);
      const cpu::PackedBf16 packed = cpu::pack_bf16(n, k, w.data<float>());
      for (Activation post : kPosts) {
        Tensor base = Tensor::empty({m, n});
        cpu::packed_bf16_linear_forward(m, x.data<float>(), packed, b.data<float>(), post,
                                        base.data<float>(), CpuIsa::avx2);
        for (CpuIsa isa : kLevels) {
          if (isa > cpu_isa()) continue;
          Tensor y = Tensor::empty({m, n});
          cpu::packed_bf16_linear_forward(m, x.data<float>(), packed, b.data<float>(), post,
                                          y.data<float>(), isa);
          EXPECT_TRUE(testing::bitwise_equal(y, base)) << cpu_isa_name(isa) << " m=" << m;
        }
      }
    }
}

// The int8 kernel for CPUs without VNNI sums u8 × s8 products exactly (in 32 bits, no 16-bit
// saturation): its s32 sums equal the integer sums of the quantised operands, which these inputs
// make large enough that pairs of products pass 32767 (where vpmaddubsw saturates). The epilogue
// is then the documented formula, evaluated here in the same f32 operations.
TEST(CpuLevels, Int8KernelSumsExactlyPastSixteenBits) {
  for (int64_t m : {1, 6, 7, 40})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{5, 3}, {33, 64}, {70, 257}}) {
      // Uniform in [0, 2]: zero point 0, so most activations quantise near 255; weights of one
      // sign near their row maximum quantise near ±127.
      const Tensor x = random_tensor({m, k}, DType::f32, 30 * m + n, 0.0, 2.0);
      Tensor w = random_tensor({n, k}, DType::f32, 31 * m + k, 0.5, 1.0);
      const Tensor b = random_tensor({n}, DType::f32, 32 * m + k);
      std::vector<int8_t> qw(n * k);
      std::vector<float> sw(n);
      std::vector<int32_t> sums(n);
      cpu::quantize_weights_s8(n, k, w.data<float>(), qw.data(), sw.data(), sums.data());
      const cpu::PackedInt8 packed = cpu::pack_int8(n, k, qw.data());
      std::vector<uint8_t> qx(m * k);
      std::vector<float> sx(m);
      std::vector<int32_t> zx(m);
      cpu::quantize_rows_u8(m, k, x.data<float>(), qx.data(), sx.data(), zx.data());
      int saturating_pairs = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t q = 0; q + 1 < k; q += 2)
            saturating_pairs += std::abs(qx[i * k + q] * qw[j * k + q] +
                                         qx[i * k + q + 1] * qw[j * k + q + 1]) > 32767;
      EXPECT_GT(saturating_pairs, 0);
      for (Activation post : {Activation::none, Activation::relu}) {
        Tensor y = Tensor::empty({m, n});
        cpu::packed_int8_linear_forward(m, x.data<float>(), packed, sw.data(), sums.data(),
                                        b.data<float>(), post, y.data<float>());
        int bad = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            int64_t acc = 0;
            for (int64_t q = 0; q < k; ++q) acc += int64_t{qx[i * k + q]} * qw[j * k + q];
            const volatile float scale = sx[i] * sw[j];
            volatile float v = scale * static_cast<float>(acc - int64_t{zx[i]} * sums[j]);
            v = v + b.data<float>()[j];
            float want = v;
            if (post == Activation::relu) want = std::max(want, 0.f);
            bad += std::memcmp(&want, y.data<float>() + i * n + j, 4) != 0;
          }
        EXPECT_EQ(bad, 0) << "m=" << m << " n=" << n << " k=" << k;
      }
    }
}

// Fused attention, forward and backward: the AVX-512 copy (32-register tiles) adds the same
// products in the same order as the AVX2 one, bit for bit: the outputs, logsumexp, returned
// probabilities and the three gradients; head sizes a multiple of the vector (64, 16) and not
// (7, the tiles' scalar columns), query and key counts across the 64-row blocks and below the
// dot-product cut-off, causal or masked, with dropout.
TEST(CpuLevels, AttentionIsBitwiseTheSameAtEveryLevel) {
  int compared = 0;
  struct Case {
    int64_t heads, dh, t, s;
    bool causal, masked, dropout;
  };
  const Case cases[] = {{4, 64, 17, 17, true, false, true},   {2, 64, 70, 70, false, true, false},
                        {3, 16, 2, 33, false, true, true},    {2, 7, 9, 80, true, false, false},
                        {1, 64, 130, 65, false, false, true}, {8, 16, 1, 20, false, true, false},
                        {2, 7, 3, 40, false, true, true},     {2, 23, 1, 9, true, false, false}};
  for (const Case& k : cases) {
    const int64_t b = 2, c = k.heads * k.dh;
    const uint64_t seed = static_cast<uint64_t>(k.heads * 1000 + k.dh * 10 + k.t + k.s);
    const Tensor q = random_tensor({b, k.t, c}, DType::f32, seed, -2.0, 2.0);
    const Tensor kk = random_tensor({b, k.s, c}, DType::f32, seed + 1, -2.0, 2.0);
    const Tensor v = random_tensor({b, k.s, c}, DType::f32, seed + 2);
    const Tensor go = random_tensor({b, k.t, c}, DType::f32, seed + 3);
    const Tensor gw = random_tensor({b, k.heads, k.t, k.s}, DType::f32, seed + 4);
    std::vector<uint8_t> mask(b * k.s);
    for (int64_t i = 0; i < b * k.s; ++i) mask[i] = i % k.s != 0 && (i * 5 + 3) % 7 == 0;
    cpu::AttentionShape shape{b, k.heads, k.t, k.s, k.dh};
    cpu::AttentionConfig cfg;
    cfg.scale = 1.0 / std::sqrt(static_cast<double>(k.dh));
    cfg.causal = k.causal;
    cfg.key_padding_mask = k.masked ? mask.data() : nullptr;
    cfg.dropout = k.dropout ? 0.2 : 0.0;
    cfg.seed = 7, cfg.stream = 3;
    struct Result {
      Tensor out, lse, weights, gq, gk, gv;
    };
    auto run = [&](CpuIsa isa) {
      Result r{Tensor::empty({b, k.t, c}),
               Tensor::empty({b, k.heads, k.t}),
               Tensor::empty({b, k.heads, k.t, k.s}),
               Tensor::empty({b, k.t, c}),
               Tensor::empty({b, k.s, c}),
               Tensor::empty({b, k.s, c})};
      cpu::attention_forward<float>(shape, cfg, q.data<float>(), kk.data<float>(), v.data<float>(),
                                    r.out.data<float>(), r.lse.data<float>(),
                                    r.weights.data<float>(), isa);
      cpu::attention_backward<float>(shape, cfg, q.data<float>(), kk.data<float>(), v.data<float>(),
                                     r.out.data<float>(), r.lse.data<float>(), go.data<float>(),
                                     r.weights.data<float>(), gw.data<float>(), r.gq.data<float>(),
                                     r.gk.data<float>(), r.gv.data<float>(), isa);
      return r;
    };
    const Result base = run(CpuIsa::avx2);
    EXPECT_GT(testing::max_abs_diff(base.gk, Tensor::zeros(base.gk.shape())), 1e-4);
    for (CpuIsa isa : kLevels) {
      if (isa > cpu_isa() || isa == CpuIsa::avx2) continue;
      const Result r = run(isa);
      const std::string where = std::string(cpu_isa_name(isa)) + " H=" + std::to_string(k.heads) +
                                " Dh=" + std::to_string(k.dh) + " T=" + std::to_string(k.t) +
                                " S=" + std::to_string(k.s);
      EXPECT_TRUE(testing::bitwise_equal(r.out, base.out)) << where;
      EXPECT_TRUE(testing::bitwise_equal(r.lse, base.lse)) << where;
      EXPECT_TRUE(testing::bitwise_equal(r.weights, base.weights)) << where;
      EXPECT_TRUE(testing::bitwise_equal(r.gq, base.gq)) << where;
      EXPECT_TRUE(testing::bitwise_equal(r.gk, base.gk)) << where;
      EXPECT_TRUE(testing::bitwise_equal(r.gv, base.gv)) << where;
      ++compared;
    }
  }
  if (cpu_isa() >= CpuIsa::avx512) {
    EXPECT_GE(compared, 8);
  }
}

// The training kernels compiled for AVX-512 besides attention: the cross-entropy gradient (one
// exp and one multiply-add an element, whatever the vector width) and dropout (integer Philox
// words and a select): bit for bit the AVX2 copy, on row lengths and sizes off the vector width.
TEST(CpuLevels, CrossEntropyGradientAndDropoutAreBitwiseTheSameAtEveryLevel) {
  int compared = 0;
  for (auto [n, v] : {std::pair<int64_t, int64_t>{5, 8000}, {3, 37}, {7, 1}}) {
    const Tensor logits = random_tensor({n, v}, DType::f32, 50 + v, -8.0, 8.0);
    std::vector<int32_t> targets(n);
    for (int64_t i = 0; i < n; ++i) targets[i] = static_cast<int32_t>((i * 7919) % v);
    targets[1] = -100;  // ignored
    std::vector<float> row_max(n), row_logsum(n);
    cpu::cross_entropy_forward<float>(n, v, logits.data<float>(), targets.data(), -100, 0.1,
                                      row_max.data(), row_logsum.data());
    Tensor base = Tensor::empty({n, v});
    cpu::cross_entropy_backward<float>(n, v, logits.data<float>(), targets.data(), -100, 0.1,
                                       row_max.data(), row_logsum.data(), 0.03, base.data<float>(),
                                       CpuIsa::avx2);
    if (v > 1) {
      EXPECT_GT(testing::max_abs_diff(base, Tensor::zeros(base.shape())), 1e-3);
    }
    for (CpuIsa isa : kLevels) {
      if (isa > cpu_isa() || isa == CpuIsa::avx2) continue;
      Tensor g = Tensor::empty({n, v});
      cpu::cross_entropy_backward<float>(n, v, logits.data<float>(), targets.data(), -100, 0.1,
                                         row_max.data(), row_logsum.data(), 0.03, g.data<float>(),
                                         isa);
      EXPECT_TRUE(testing::bitwise_equal(g, base)) << cpu_isa_name(isa) << " V=" << v;
      ++compared;
    }
  }
  for (int64_t n : {int64_t{1}, int64_t{31}, int64_t{32}, int64_t{1000}, int64_t{70001}}) {
    const Tensor x = random_tensor({n}, DType::f32, 60 + n);
    const RandomStream stream(11, 4);
    Tensor base = Tensor::empty({n});
    cpu::dropout_apply<float>(n, x.data<float>(), stream, 0.3, base.data<float>(), CpuIsa::avx2);
    int64_t dropped = 0;
    for (int64_t i = 0; i < n; ++i) {
      const bool keep = stream.uniform(static_cast<uint64_t>(i)) >= 0.3;
      EXPECT_EQ(base.data<float>()[i],
                keep ? x.data<float>()[i] * static_cast<float>(1.0 / 0.7) : 0.f)
          << i;
      dropped += !keep;
    }
    if (n >= 1000) {
      EXPECT_GT(dropped, n / 5);
    }
    for (CpuIsa isa : kLevels) {
      if (isa > cpu_isa() || isa == CpuIsa::avx2) continue;
      Tensor y = Tensor::empty({n});
      cpu::dropout_apply<float>(n, x.data<float>(), stream, 0.3, y.data<float>(), isa);
      EXPECT_TRUE(testing::bitwise_equal(y, base)) << cpu_isa_name(isa) << " n=" << n;
      ++compared;
    }
  }
  if (cpu_isa() >= CpuIsa::avx512) {
    EXPECT_GE(compared, 8);
  }
}

// One-query attention: the AVX-512 copy of the row kernel computes the same scores, softmax and
// weighted sums in the same order as the AVX2 one, bit for bit, on every path of the kernel:
// head sizes that are (64, 16) and are not (7) a multiple of the vector, key counts around the
// 8-position score blocks, masks, the beams' shared rows (kv_rows) and slots (kv_slots), and the
// probabilities copied out on request.
TEST(CpuLevels, DecodeAttentionIsBitwiseTheSameAtEveryLevel) {
  int compared = 0;
  for (auto [heads, dh] : {std::pair<int64_t, int64_t>{4, 64}, {8, 64}, {2, 16}, {3, 7}})
    for (int64_t s : {1, 7, 8, 9, 23, 70})
      for (int indirection : {0, 1, 2}) {  // own rows, kv_rows, kv_slots
        const int64_t b = 6, key_rows = 4, c = heads * dh;
        const uint64_t seed = static_cast<uint64_t>(1000 * heads + 10 * dh + s + indirection);
        const Tensor q = random_tensor({b, c}, DType::f32, seed, -2.0, 2.0);
        const Tensor k = random_tensor({b, s, c}, DType::f32, seed + 1, -2.0, 2.0);
        const Tensor v = random_tensor({b, s, c}, DType::f32, seed + 2);
        std::vector<uint8_t> mask(b * s);
        for (int64_t i = 0; i < b * s; ++i) mask[i] = (i * 7 + s) % 5 == 0 && i % s != 0;
        std::vector<int32_t> rows(b), slots(b * s);
        for (int64_t r = 0; r < b; ++r) rows[r] = static_cast<int32_t>((r * 3) % key_rows);
        for (int64_t i = 0; i < b * s; ++i) slots[i] = static_cast<int32_t>((i * 5 + 1) % key_rows);
        cpu::DecodeAttentionArgs a;
        a.batch = b, a.heads = heads, a.kv_len = s, a.head_dim = dh;
        a.q = q.data<float>(), a.k = k.data<float>(), a.v = v.data<float>();
        a.kv_batch_stride = s * c, a.key_rows = b, a.mask = mask.data();
        if (indirection == 1) a.kv_rows = rows.data();
        if (indirection == 2) a.kv_slots = slots.data(), a.kv_slots_ld = s;
        a.scale = 0.125f;
        auto run = [&](CpuIsa isa, Tensor& out, Tensor& probs) {
          out = Tensor::empty({b, c});
          probs = Tensor::empty({b, heads, s});
          a.out = out.data<float>(), a.probs = probs.data<float>();
          cpu::decode_attention_forward(a, isa);
        };
        Tensor base, base_probs;
        run(CpuIsa::avx2, base, base_probs);
        EXPECT_GT(testing::max_abs_diff(base, Tensor::zeros(base.shape())), 1e-3);
        for (CpuIsa isa : kLevels) {
          if (isa > cpu_isa() || isa == CpuIsa::avx2) continue;
          Tensor out, probs;
          run(isa, out, probs);
          EXPECT_TRUE(testing::bitwise_equal(out, base))
              << cpu_isa_name(isa) << " H=" << heads << " Dh=" << dh << " S=" << s;
          EXPECT_TRUE(testing::bitwise_equal(probs, base_probs)) << cpu_isa_name(isa);
          ++compared;
        }
      }
  if (cpu_isa() >= CpuIsa::avx512) {
    EXPECT_GE(compared, 4 * 6 * 3);
  }
}

// linear_lowp picks, per level, the int8 kernel whose sums are exact: oneDNN's with VNNI, tfm's
// without. Both give the same s32 sums, so they agree to the last rounding of the epilogue.
TEST(CpuLevels, Int8PicksAnExactKernelAtThisLevel) {
  NoGradGuard no_grad;
  const int64_t m = 9, n = 50, k = 96;
  const Tensor x = random_tensor({m, k}, DType::f32, 40, 0.0, 2.0);
  const Tensor w = random_tensor({n, k}, DType::f32, 41, 0.5, 1.0);
  const LowpWeight lw(w, ComputeType::int8);
  EXPECT_EQ(lw.packed().onednn.desc != nullptr, cpu_has_vnni());
  EXPECT_EQ(lw.packed().int8.data != nullptr, !cpu_has_vnni());
  const Tensor y = linear_lowp(x, lw);
  Tensor own = Tensor::empty({m, n});
  if (cpu_has_vnni()) {
    std::vector<int8_t> qw(n * k);
    std::vector<float> sw(n);
    std::vector<int32_t> sums(n);
    cpu::quantize_weights_s8(n, k, w.data<float>(), qw.data(), sw.data(), sums.data());
    cpu::packed_int8_linear_forward(m, x.data<float>(), cpu::pack_int8(n, k, qw.data()), sw.data(),
                                    sums.data(), nullptr, Activation::none, own.data<float>());
  } else {
    const auto& p = lw.packed();
    cpu::packed_int8_linear_forward(m, x.data<float>(), p.int8, p.scales.data(), p.sums.data(),
                                    nullptr, Activation::none, own.data<float>());
  }
  for (int64_t i = 0; i < m * n; ++i)
    EXPECT_NEAR(y.data<float>()[i], own.data<float>()[i], 1e-6 * std::abs(own.data<float>()[i]))
        << i;
}

}  // namespace
}  // namespace tfm
