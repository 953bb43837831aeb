#include <cmath>
#include <limits>
#include <vector>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/allocator.h"
#include "tfm/core/parallel.h"
#include "tfm/core/rng.h"
#include "tfm/ops/attention.h"

namespace tfm {
namespace {

using testing::all_close;
using testing::bitwise_equal;
using testing::gradcheck;
using testing::random_tensor;

struct Case {
  int64_t B, T, S, H, Dh;
  bool causal;
  bool padding;
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << "B=" << c.B << " T=" << c.T << " S=" << c.S << " H=" << c.H << " Dh=" << c.Dh
            << (c.causal ? " causal" : "") << (c.padding ? " padded" : "");
}

// Key padding with a different valid length per batch row, at least one key always valid.
Tensor padding_mask(int64_t B, int64_t S, uint64_t seed) {
  RandomStream rs(seed, 99);
  std::vector<uint8_t> m(B * S);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = 1 + static_cast<int64_t>(rs.uniform_f64(b) * S) % S;
    for (int64_t s = 0; s < S; ++s) m[b * S + s] = s >= len ? 1 : 0;
  }
  return Tensor::from_vector<uint8_t>({B, S}, m);
}

struct Reference {
  Tensor out;      // (B, T, H·Dh) f64
  Tensor weights;  // (B, H, T, S) f64
};

// Attention spelled out: scores, mask, softmax, dropout, ·V, in double loops.
Reference reference(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, int64_t H,
                    const Tensor& mask_in, bool causal, double scale = 0.0, double dropout = 0.0,
                    const RandomStream* stream = nullptr) {
  const auto q = q_in.to(DType::f64).to_vector<double>();
  const auto k = k_in.to(DType::f64).to_vector<double>();
  const auto v = v_in.to(DType::f64).to_vector<double>();
  const int64_t B = q_in.size(0), T = q_in.size(1), C = q_in.size(2), S = k_in.size(1);
  const int64_t Dh = C / H;
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(Dh));
  std::vector<uint8_t> mask(B * S, 0);
  if (mask_in.defined()) mask = mask_in.to_vector<uint8_t>();
  std::vector<double> out(B * T * C, 0.0), w(B * H * T * S, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> sc(S);
        std::vector<bool> ok(S);
        double mx = -INFINITY;
        for (int64_t s = 0; s < S; ++s) {
          ok[s] = !mask[b * S + s] && (!causal || s <= t + (S - T));
          double dot = 0;
          for (int64_t d = 0; d < Dh; ++d)
            dot += q[(b * T + t) * C + h * Dh + d] * k[(b * S + s) * C + h * Dh + d];
          sc[s] = dot * scale;
          if (ok[s]) mx = std::max(mx, sc[s]);
        }
        if (mx == -INFINITY) continue;  // nothing visible: zeros
        double sum = 0;
        for (int64_t s = 0; s < S; ++s) sum += ok[s] ? std::exp(sc[s] - mx) : 0.0;
        for (int64_t s = 0; s < S; ++s) {
          const double p = ok[s] ? std::exp(sc[s] - mx) / sum : 0.0;
          const int64_t idx = ((b * H + h) * T + t) * S + s;
          w[idx] = p;
          double z = 1.0;
          if (dropout > 0) z = stream->uniform(idx) >= dropout ? 1.0 / (1.0 - dropout) : 0.0;
          for (int64_t d = 0; d < Dh; ++d)
            out[(b * T + t) * C + h * Dh + d] += p * z * v[(b * S + s) * C + h * Dh + d];
        }
      }
  return {Tensor::from_vector<double>({B, T, C}, out),
          Tensor::from_vector<double>({B, H, T, S}, w)};
}

const std::vector<Case> kCases = {
    {2, 5, 5, 2, 4, false, false},     // plain self-attention
    {2, 5, 7, 3, 5, false, true},      // T < S, odd Dh, padding
    {2, 6, 6, 1, 3, true, false},      // causal, one head
    {3, 7, 4, 2, 8, true, true},       // T > S causal: early queries see nothing
    {2, 3, 9, 4, 2, true, true},       // T < S causal (KV cache) with padding
    {1, 1, 1, 1, 3, false, false},     // length 1
    {1, 1, 1, 1, 1, true, true},       // length 1, Dh = 1, both masks
    {2, 33, 33, 8, 64, true, true},    // a training shape
    {1, 70, 130, 2, 16, true, true},   // several query and key blocks
    {1, 130, 70, 2, 16, true, false},  // several blocks, T > S
    {3, 1, 200, 4, 64, false, true},   // decoding: one query, dot-product path
    {2, 2, 100, 2, 24, true, true},    // two queries, dot path, Dh not a vector multiple
    {1, 67, 67, 16, 4, false, true},   // many narrow heads
    {2, 9, 21, 3, 20, true, true},     // Dh past a multiple of the vector width
};

TEST(Attention, MatchesReference) {
  for (const Case& c : kCases) {
    for (DType dt : {DType::f32, DType::f64}) {
      SCOPED_TRACE(::testing::Message() << c << " " << dtype_name(dt));
      Tensor q = random_tensor({c.B, c.T, c.H * c.Dh}, dt, 1, -2, 2);
      Tensor k = random_tensor({c.B, c.S, c.H * c.Dh}, dt, 2, -2, 2);
      Tensor v = random_tensor({c.B, c.S, c.H * c.Dh}, dt, 3);
      Tensor mask = c.padding ? padding_mask(c.B, c.S, 4) : Tensor();
      AttentionOptions opt;
      opt.causal = c.causal;
      opt.return_weights = true;
      AttentionResult r = attention(q, k, v, c.H, mask, opt);
      Reference ref = reference(q, k, v, c.H, mask, c.causal);
      const double rtol = dt == DType::f32 ? 2e-5 : 1e-12;
      const double atol = dt == DType::f32 ? 2e-6 : 1e-14;
      EXPECT_TRUE(all_close(r.out, ref.out, rtol, atol));
      EXPECT_TRUE(all_close(r.weights, ref.weights, rtol, atol));
      // Asking for the weights does not change the output.
      opt.return_weights = false;
      AttentionResult r2 = attention(q, k, v, c.H, mask, opt);
      EXPECT_FALSE(r2.weights.defined());
      EXPECT_TRUE(bitwise_equal(r2.out, r.out));
    }
  }
}

// Scores of hundreds, growing along the keys: the running max of the online softmax jumps by
// far more than exp can represent from one key block to the next, so the accumulated output
// must be rescaled (to zero) rather than kept.
TEST(Attention, PeakedScoresAcrossKeyBlocks) {
  const int64_t B = 1, T = 40, S = 200, H = 2, C = 32;
  for (DType dt : {DType::f32, DType::f64}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor q = random_tensor({B, T, C}, DType::f64, 60, 2, 6);
    Tensor k = random_tensor({B, S, C}, DType::f64, 61, -1, 1);
    double* pk = k.data<double>();
    for (int64_t s = 0; s < S; ++s)
      for (int64_t c = 0; c < C; ++c) pk[s * C + c] = 1.0 + 0.2 * s + 0.5 * pk[s * C + c];
    q = q.to(dt);
    k = k.to(dt);
    Tensor v = random_tensor({B, S, C}, dt, 62);
    for (bool causal : {false, true}) {
      AttentionOptions opt;
      opt.causal = causal;
      opt.return_weights = true;
      AttentionResult r = attention(q, k, v, H, Tensor(), opt);
      Reference ref = reference(q, k, v, H, Tensor(), causal);
      const double tol = dt == DType::f32 ? 2e-3 : 1e-10;
      EXPECT_TRUE(all_close(r.out, ref.out, tol, tol));
      EXPECT_TRUE(all_close(r.weights, ref.weights, tol, tol));
    }
  }
}

TEST(Attention, ExplicitScaleAndNonContiguousInputs) {
  Tensor q = random_tensor({6, 2, 8}, DType::f64, 5).transpose(0, 1);  // (2, 6, 8) strided
  Tensor k = random_tensor({2, 9, 8}, DType::f64, 6);
  Tensor v = random_tensor({2, 9, 8}, DType::f64, 7);
  AttentionOptions opt;
  opt.scale = 0.7;
  AttentionResult r = attention(q, k, v, 2, Tensor(), opt);
  EXPECT_TRUE(all_close(r.out, reference(q, k, v, 2, Tensor(), false, 0.7).out, 1e-12, 1e-14));
}

TEST(Attention, KvCacheQueriesMatchFullCausalRows) {
  // The last 3 queries against all 20 keys (causal, aligned to the end) are the last 3 rows of
  // full causal self-attention.
  Tensor q = random_tensor({2, 20, 12}, DType::f32, 8);
  Tensor k = random_tensor({2, 20, 12}, DType::f32, 9);
  Tensor v = random_tensor({2, 20, 12}, DType::f32, 10);
  AttentionOptions opt;
  opt.causal = true;
  Tensor full = attention(q, k, v, 3, Tensor(), opt).out;
  for (int64_t n : {1, 3}) {
    Tensor tail = Tensor::empty({2, n, 12});
    Tensor expect = Tensor::empty({2, n, 12});
    for (int64_t b = 0; b < 2; ++b) {
      tail.select(b).copy_(q.select(b).slice(20 - n, 20));
      expect.select(b).copy_(full.select(b).slice(20 - n, 20));
    }
    EXPECT_TRUE(all_close(attention(tail, k, v, 3, Tensor(), opt).out, expect, 1e-5, 1e-6));
  }
}

TEST(Attention, GradcheckWithMasks) {
  for (const Case& c : {Case{2, 4, 5, 2, 3, true, true}, Case{2, 5, 3, 1, 5, true, true},
                        Case{1, 1, 4, 2, 2, false, true}, Case{1, 66, 130, 1, 2, true, true}}) {
    SCOPED_TRACE(::testing::Message() << c);
    Tensor q = random_tensor({c.B, c.T, c.H * c.Dh}, DType::f64, 11, -2, 2).set_requires_grad(true);
    Tensor k = random_tensor({c.B, c.S, c.H * c.Dh}, DType::f64, 12, -2, 2).set_requires_grad(true);
    Tensor v = random_tensor({c.B, c.S, c.H * c.Dh}, DType::f64, 13).set_requires_grad(true);
    Tensor mask = padding_mask(c.B, c.S, 14);
    EXPECT_TRUE(gradcheck(
        [&](auto& in) {
          AttentionOptions opt;
          opt.causal = c.causal;
          return attention(in[0], in[1], in[2], c.H, mask, opt).out;
        },
        {q, k, v}));
  }
}

TEST(Attention, GradcheckSharedInput) {
  // Self-attention on one tensor: its gradient sums the q, k and v contributions.
  Tensor x = random_tensor({2, 5, 6}, DType::f64, 63, -2, 2).set_requires_grad(true);
  Tensor mask = padding_mask(2, 5, 64);
  EXPECT_TRUE(gradcheck(
      [&](auto& in) {
        AttentionOptions opt;
        opt.causal = true;
        return attention(in[0], in[0], in[0], 3, mask, opt).out;
      },
      {x}));
}

TEST(Attention, GradcheckWithDropout) {
  // The second case spans two query and three key blocks, so the backward must regenerate the
  // mask at the right stream offsets.
  for (const Case& c : {Case{2, 4, 6, 2, 3, true, true}, Case{1, 66, 130, 1, 2, true, true}}) {
    SCOPED_TRACE(::testing::Message() << c);
    Tensor q = random_tensor({c.B, c.T, c.H * c.Dh}, DType::f64, 15, -2, 2).set_requires_grad(true);
    Tensor k = random_tensor({c.B, c.S, c.H * c.Dh}, DType::f64, 16, -2, 2).set_requires_grad(true);
    Tensor v = random_tensor({c.B, c.S, c.H * c.Dh}, DType::f64, 17).set_requires_grad(true);
    Tensor mask = padding_mask(c.B, c.S, 18);
    EXPECT_TRUE(gradcheck(
        [&](auto& in) {
          Generator gen(77);  // the same mask for every evaluation
          AttentionOptions opt;
          opt.causal = c.causal;
          opt.dropout = 0.4;
          opt.generator = &gen;
          return attention(in[0], in[1], in[2], c.H, mask, opt).out;
        },
        {q, k, v}));
  }
}

TEST(Attention, GradcheckThroughReturnedWeights) {
  Tensor q = random_tensor({2, 3, 4}, DType::f64, 19, -2, 2).set_requires_grad(true);
  Tensor k = random_tensor({2, 5, 4}, DType::f64, 20, -2, 2).set_requires_grad(true);
  Tensor v = random_tensor({2, 5, 4}, DType::f64, 21).set_requires_grad(true);
  Tensor mask = padding_mask(2, 5, 22);
  AttentionOptions opt;
  opt.causal = true;
  opt.return_weights = true;
  // Loss on the probabilities only (v gets no gradient), then on the output only.
  EXPECT_TRUE(gradcheck(
      [&](auto& in) { return attention(in[0], in[1], in[2], 2, mask, opt).weights; }, {q, k, v}));
  EXPECT_TRUE(gradcheck([&](auto& in) { return attention(in[0], in[1], in[2], 2, mask, opt).out; },
                        {q, k, v}));
}

// f32 gradients (vector paths with 16 lanes) against f64 ones (8 lanes, gradchecked above) on
// shapes spanning several blocks.
TEST(Attention, Float32GradientsMatchFloat64) {
  for (const Case& c : {Case{2, 70, 90, 2, 64, true, true}, Case{3, 17, 17, 4, 20, false, true},
                        Case{1, 2, 80, 2, 32, true, false}}) {
    for (double p : {0.0, 0.2}) {
      SCOPED_TRACE(::testing::Message() << c << " dropout " << p);
      std::vector<Tensor> g32, g64;
      for (DType dt : {DType::f32, DType::f64}) {
        Tensor q = random_tensor({c.B, c.T, c.H * c.Dh}, dt, 23, -2, 2).set_requires_grad(true);
        Tensor k = random_tensor({c.B, c.S, c.H * c.Dh}, dt, 24, -2, 2).set_requires_grad(true);
        Tensor v = random_tensor({c.B, c.S, c.H * c.Dh}, dt, 25).set_requires_grad(true);
        Generator gen(5);
        AttentionOptions opt;
        opt.causal = c.causal;
        opt.dropout = p;
        opt.generator = &gen;
        Tensor mask = c.padding ? padding_mask(c.B, c.S, 26) : Tensor();
        Tensor out = attention(q, k, v, c.H, mask, opt).out;
        autograd::backward(out, random_tensor(out.shape(), dt, 27));
        auto& g = dt == DType::f32 ? g32 : g64;
        g = {q.grad(), k.grad(), v.grad()};
      }
      for (int i = 0; i < 3; ++i)
        EXPECT_TRUE(all_close(g32[i], g64[i], 1e-4, 2e-5)) << "input " << i;
    }
  }
}

// With q = k = 0 every visible key has probability 1/S, and with v = identity (Dh = S, one head)
// out[b, t, s] = z_bts / S exposes the dropout multipliers z directly; returns S·out.
std::vector<double> observed_multipliers(Generator& gen, double p, int64_t B, int64_t T,
                                         int64_t S) {
  Tensor q = Tensor::zeros({B, T, S});
  Tensor k = Tensor::zeros({B, S, S});
  Tensor v = Tensor::zeros({B, S, S});
  float* pv = v.data<float>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) pv[(b * S + s) * S + s] = 1.0f;
  AttentionOptions opt;
  opt.dropout = p;
  opt.generator = &gen;
  std::vector<double> z =
      attention(q, k, v, 1, Tensor(), opt).out.to(DType::f64).to_vector<double>();
  for (double& x : z) x *= static_cast<double>(S);
  return z;
}

TEST(Attention, DropoutMaskFollowsTheStream) {
  const int64_t B = 2, T = 64, S = 96;
  const double p = 0.3;
  Generator gen(123);
  gen.next_stream();  // the call should use the generator's current position
  const RandomStream expected_stream(123, 1);
  std::vector<double> z = observed_multipliers(gen, p, B, T, S);
  EXPECT_EQ(gen.position(), 2u);  // exactly one stream per call
  int64_t kept = 0, mismatches = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    const bool keep = expected_stream.uniform(i) >= p;  // flat index ((b·H + h)·T + t)·S + s
    const double want = keep ? 1.0 / (1.0 - p) : 0.0;
    mismatches += std::abs(z[i] - want) > 1e-5;
    kept += z[i] != 0.0;
  }
  EXPECT_EQ(mismatches, 0);
  const double frac = static_cast<double>(kept) / static_cast<double>(z.size());
  EXPECT_NEAR(frac, 1.0 - p, 0.02);  // 12288 draws: sd ≈ 0.004

  Generator same(123), other(124);
  same.next_stream();
  other.next_stream();
  EXPECT_EQ(observed_multipliers(same, p, B, T, S), z);
  std::vector<double> zo = observed_multipliers(other, p, B, T, S);
  int64_t differ = 0;
  for (size_t i = 0; i < z.size(); ++i) differ += zo[i] != z[i];
  EXPECT_GT(differ, static_cast<int64_t>(z.size()) / 4);  // expected 2p(1-p) = 42%

  // No dropout takes no stream.
  Generator untouched(5);
  observed_multipliers(untouched, 0.0, 1, 2, 3);
  EXPECT_EQ(untouched.position(), 0u);
}

TEST(Attention, FullyMaskedRowsGiveZerosNotNaN) {
  // Batch row 1 has every key padded; with causal and T > S the first T - S queries of batch
  // row 0 see nothing either.
  const int64_t B = 2, T = 6, S = 4, H = 2, C = 6;
  std::vector<uint8_t> m(B * S, 0);
  for (int64_t s = 0; s < S; ++s) m[S + s] = 1;
  Tensor mask = Tensor::from_vector<uint8_t>({B, S}, m);
  for (DType dt : {DType::f32, DType::f64}) {
    for (double p : {0.0, 0.5}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " dropout " << p);
      Tensor q = random_tensor({B, T, C}, dt, 30).set_requires_grad(true);
      Tensor k = random_tensor({B, S, C}, dt, 31).set_requires_grad(true);
      Tensor v = random_tensor({B, S, C}, dt, 32).set_requires_grad(true);
      Generator gen(3);
      AttentionOptions opt;
      opt.causal = true;
      opt.return_weights = true;
      opt.dropout = p;
      opt.generator = &gen;
      AttentionResult r = attention(q, k, v, H, mask, opt);
      autograd::backward(r.out, random_tensor(r.out.shape(), dt, 33));
      for (const Tensor& t : {r.out, r.weights, q.grad(), k.grad(), v.grad()})
        for (double x : t.to(DType::f64).to_vector<double>()) ASSERT_TRUE(std::isfinite(x));
      for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < C; ++c) {
          const bool blind0 = t < T - S;
          if (blind0) {
            EXPECT_EQ(r.out.at({0, t, c}), 0.0);
            EXPECT_EQ(q.grad().at({0, t, c}), 0.0);
          }
          EXPECT_EQ(r.out.at({1, t, c}), 0.0);
          EXPECT_EQ(q.grad().at({1, t, c}), 0.0);
        }
      for (int64_t s = 0; s < S; ++s)
        for (int64_t c = 0; c < C; ++c) {
          EXPECT_EQ(k.grad().at({1, s, c}), 0.0);
          EXPECT_EQ(v.grad().at({1, s, c}), 0.0);
        }
      for (int64_t h = 0; h < H; ++h)
        for (int64_t s = 0; s < S; ++s) EXPECT_EQ(r.weights.at({1, h, 3, s}), 0.0);
    }
  }
}

TEST(Attention, ThreadCountDoesNotChangeResults) {
  const int saved = get_threads();
  auto run = [](int threads) {
    set_threads(threads);
    Tensor q = random_tensor({3, 70, 128}, DType::f32, 40, -2, 2).set_requires_grad(true);
    Tensor k = random_tensor({3, 90, 128}, DType::f32, 41, -2, 2).set_requires_grad(true);
    Tensor v = random_tensor({3, 90, 128}, DType::f32, 42).set_requires_grad(true);
    Generator gen(9);
    AttentionOptions opt;
    opt.causal = true;
    opt.dropout = 0.1;
    opt.generator = &gen;
    opt.return_weights = true;
    AttentionResult r = attention(q, k, v, 4, padding_mask(3, 90, 43), opt);
    autograd::backward(r.out, random_tensor(r.out.shape(), DType::f32, 44));
    return std::vector<Tensor>{r.out, r.weights, q.grad(), k.grad(), v.grad()};
  };
  std::vector<Tensor> one = run(1), two = run(2);
  set_threads(saved);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(bitwise_equal(one[i], two[i])) << i;
}

// Training memory is O(B·T·C + B·H·T): the (B, H, T, S) scores (16 MiB here) never exist.
TEST(Attention, TrainingMemoryDoesNotGrowWithScores) {
  const int64_t B = 1, H = 4, T = 1024, S = 1024, C = 32;
  Tensor q = random_tensor({B, T, C}, DType::f32, 70).set_requires_grad(true);
  Tensor k = random_tensor({B, S, C}, DType::f32, 71).set_requires_grad(true);
  Tensor v = random_tensor({B, S, C}, DType::f32, 72).set_requires_grad(true);
  Tensor g = random_tensor({B, T, C}, DType::f32, 73);
  const size_t io_bytes = static_cast<size_t>(B * T * C) * sizeof(float);  // 128 KiB
  const size_t before = cpu_allocator().stats().in_use_bytes;
  cpu_allocator().reset_peak();
  AttentionOptions opt;
  opt.causal = true;
  opt.dropout = 0.1;
  Tensor out = attention(q, k, v, H, Tensor(), opt).out;
  autograd::backward(out, g);
  const size_t peak = cpu_allocator().stats().peak_in_use_bytes - before;
  // out, lse, dq, dk, dv and allocator rounding: well under 16 io_bytes; scores alone would
  // be 4·H·T·S = 128 io_bytes.
  EXPECT_LT(peak, 16 * io_bytes);
  EXPECT_GT(peak, 4 * io_bytes);  // the test measures something
}

TEST(Attention, EmptySequences) {
  // No keys: every query is fully masked (zeros); no queries: an empty output.
  Tensor q = random_tensor({2, 3, 8}, DType::f64, 80).set_requires_grad(true);
  Tensor none = Tensor::zeros({2, 0, 8}, DType::f64).set_requires_grad(true);
  AttentionResult r = attention(q, none, none, 2);
  EXPECT_TRUE(all_close(r.out, Tensor::zeros({2, 3, 8}, DType::f64), 0, 0));
  autograd::backward(r.out, Tensor::ones({2, 3, 8}, DType::f64));
  EXPECT_TRUE(all_close(q.grad(), Tensor::zeros({2, 3, 8}, DType::f64), 0, 0));
  Tensor kv = random_tensor({2, 4, 8}, DType::f64, 81);
  EXPECT_EQ(attention(Tensor::zeros({2, 0, 8}, DType::f64), kv, kv, 2).out.shape(),
            (Shape{2, 0, 8}));
}

TEST(Attention, NoGradModeSavesNothing) {
  Tensor q = random_tensor({1, 3, 8}, DType::f32, 50).set_requires_grad(true);
  Tensor k = random_tensor({1, 5, 8}, DType::f32, 51);
  NoGradGuard ng;
  Tensor out = attention(q, k, k, 2).out;
  EXPECT_FALSE(out.requires_grad());
  EXPECT_EQ(autograd::tape_size(), 0u);
}

TEST(Attention, ErrorsNameTheOpAndShapes) {
  Tensor q = Tensor::zeros({2, 3, 8});
  Tensor k = Tensor::zeros({2, 5, 8});
  EXPECT_TFM_ERROR(attention(q, k, k, 3),
                   "attention: 3 heads do not divide the width 8 of q f32 (2, 3, 8)");
  EXPECT_TFM_ERROR(attention(q, k, k, 0), "heads do not divide");
  EXPECT_TFM_ERROR(attention(q, Tensor::zeros({3, 5, 8}), Tensor::zeros({3, 5, 8}), 2),
                   "attention: batch sizes differ, q f32 (2, 3, 8), k f32 (3, 5, 8)");
  EXPECT_TFM_ERROR(attention(q, k, Tensor::zeros({2, 4, 8}), 2),
                   "attention: k and v lengths differ, k f32 (2, 5, 8) vs v f32 (2, 4, 8)");
  EXPECT_TFM_ERROR(attention(q, Tensor::zeros({2, 5, 6}), Tensor::zeros({2, 5, 6}), 2),
                   "attention: widths differ");
  EXPECT_TFM_ERROR(attention(Tensor::zeros({3, 8}), k, k, 2), "attention: q, k, v must be");
  EXPECT_TFM_ERROR(attention(q, k, Tensor::zeros({2, 5, 8}, DType::f64), 2),
                   "attention: dtypes differ");
  EXPECT_TFM_ERROR(attention(q, k, k, 2, Tensor::zeros({2, 4}, DType::u8)),
                   "attention: key_padding_mask must be u8 (B, S) = (2, 5), got u8 (2, 4)");
  EXPECT_TFM_ERROR(attention(q, k, k, 2, Tensor::zeros({2, 5})),
                   "attention: key_padding_mask must be u8 (B, S) = (2, 5), got f32 (2, 5)");
  for (double p : {-0.1, 1.0, 1.5, std::nan("")}) {
    AttentionOptions opt;
    opt.dropout = p;
    EXPECT_TFM_ERROR(attention(q, k, k, 2, Tensor(), opt),
                     "attention: dropout p must be in [0, 1)");
  }
  EXPECT_TFM_ERROR(attention(Tensor::zeros({2, 3, 8}, DType::i32), k, k, 2),
                   "attention: q must be f32 or f64");
}

}  // namespace
}  // namespace tfm
