// Fused attention (tiled, online softmax) against a naive version that materialises the
// (B, H, T, S) scores with gemm_batched and runs a separate softmax, forward and forward+backward.
//
// The GFLOP counter (a rate, printed GFLOP/s) counts matmul FLOPs of the algorithm, the same for
// both versions so the ratio of the counters is the ratio of speeds: forward 4·B·H·T·S·Dh (QKᵀ and
// P·V), forward+backward 14·B·H·T·S·Dh (the FlashAttention-2 convention: backward = 2.5 × forward).
//
//   build/bench/bench_attention --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/core/rng.h"
#include "tfm/ops/attention.h"
#include "tfm/ops/cpu/attention_tiles_cpu.h"
#include "tfm/ops/cpu/primitives.h"

namespace {

using tfm::Tensor;

Tensor random(const tfm::Shape& shape, uint64_t seed) {
  Tensor t = Tensor::empty(shape);
  tfm::RandomStream rs(seed, 1);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = 2.0f * rs.uniform(i) - 1.0f;
  return t;
}

struct Dims {
  int64_t B, H, T, S, Dh;
  int64_t C() const { return H * Dh; }
  double flops() const { return 4.0 * B * H * T * S * Dh; }
};

Dims dims(const benchmark::State& st) {
  return {st.range(0), st.range(1), st.range(2), st.range(3), st.range(4)};
}

void set_flops(benchmark::State& st, double flops) {
  st.counters["GFLOP"] =  // shown as GFLOP/s
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// --- naive: scores materialised ------------------------------------------------------------

// Row softmax in place over (rows, S), with the same vectorised exp as the fused kernel so the
// comparison measures fusion and tiling, not exp.
void softmax_rows(float* x, int64_t rows, int64_t S) {
  using V = tfm::cpu::attn::Vec<float>;
  constexpr int L = 16;
  tfm::parallel_for(rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* row = x + r * S;
      float m = -INFINITY;
      for (int64_t j = 0; j < S; ++j) m = std::max(m, row[j]);
      float sum = 0;
      int64_t j = 0;
      for (; j + L <= S; j += L) {
        const V e = tfm::cpu::attn::exp_vec(tfm::cpu::attn::vload(row + j) - m);
        tfm::cpu::attn::vstore(row + j, e);
        sum += tfm::cpu::attn::hsum(e);
      }
      for (; j < S; ++j) sum += (row[j] = std::exp(row[j] - m));
      const float inv = 1.0f / sum;
      for (int64_t i = 0; i < S; ++i) row[i] *= inv;
    }
  });
}

struct Naive {
  Dims d;
  float scale;
  std::vector<float> p, dp;  // (B, H, T, S)

  explicit Naive(Dims dd)
      : d(dd),
        scale(1.0f / std::sqrt(static_cast<float>(dd.Dh))),
        p(dd.B * dd.H * dd.T * dd.S),
        dp(dd.B * dd.H * dd.T * dd.S) {}

  // Per batch row, one gemm_batched over the heads: head h is at offset h·Dh, row stride C.
  void forward(const float* q, const float* k, const float* v, float* out) {
    const int64_t C = d.C(), TS = d.T * d.S;
    for (int64_t b = 0; b < d.B; ++b)
      tfm::cpu::gemm_batched<float>(false, true, d.H, d.T, d.S, d.Dh, scale, q + b * d.T * C, C,
                                    d.Dh, k + b * d.S * C, C, d.Dh, 0.f, p.data() + b * d.H * TS,
                                    d.S, TS);
    softmax_rows(p.data(), d.B * d.H * d.T, d.S);
    for (int64_t b = 0; b < d.B; ++b)
      tfm::cpu::gemm_batched<float>(false, false, d.H, d.T, d.Dh, d.S, 1.f, p.data() + b * d.H * TS,
                                    d.S, TS, v + b * d.S * C, C, d.Dh, 0.f, out + b * d.T * C, C,
                                    d.Dh);
  }

  void backward(const float* q, const float* k, const float* v, const float* dout, float* dq,
                float* dk, float* dv) {
    const int64_t C = d.C(), TS = d.T * d.S;
    for (int64_t b = 0; b < d.B; ++b) {
      const float* pb = p.data() + b * d.H * TS;
      float* dpb = dp.data() + b * d.H * TS;
      const float* dob = dout + b * d.T * C;
      tfm::cpu::gemm_batched<float>(false, true, d.H, d.T, d.S, d.Dh, 1.f, dob, C, d.Dh,
                                    v + b * d.S * C, C, d.Dh, 0.f, dpb, d.S, TS);
      tfm::cpu::gemm_batched<float>(true, false, d.H, d.S, d.Dh, d.T, 1.f, pb, d.S, TS, dob, C,
                                    d.Dh, 0.f, dv + b * d.S * C, C, d.Dh);
    }
    // dS = scale · P ∘ (dP − rowsum(P ∘ dP)), in place of dP.
    tfm::parallel_for(d.B * d.H * d.T, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* pr = p.data() + r * d.S;
        float* g = dp.data() + r * d.S;
        float dot = 0;
        for (int64_t j = 0; j < d.S; ++j) dot += pr[j] * g[j];
        for (int64_t j = 0; j < d.S; ++j) g[j] = scale * pr[j] * (g[j] - dot);
      }
    });
    for (int64_t b = 0; b < d.B; ++b) {
      const float* dsb = dp.data() + b * d.H * TS;
      tfm::cpu::gemm_batched<float>(false, false, d.H, d.T, d.Dh, d.S, 1.f, dsb, d.S, TS,
                                    k + b * d.S * C, C, d.Dh, 0.f, dq + b * d.T * C, C, d.Dh);
      tfm::cpu::gemm_batched<float>(true, false, d.H, d.S, d.Dh, d.T, 1.f, dsb, d.S, TS,
                                    q + b * d.T * C, C, d.Dh, 0.f, dk + b * d.S * C, C, d.Dh);
    }
  }
};

// --- benchmarks ----------------------------------------------------------------------------

void BM_fused_forward(benchmark::State& st) {
  const Dims d = dims(st);
  Tensor q = random({d.B, d.T, d.C()}, 1), k = random({d.B, d.S, d.C()}, 2),
         v = random({d.B, d.S, d.C()}, 3);
  tfm::NoGradGuard ng;
  for (auto _ : st) benchmark::DoNotOptimize(tfm::attention(q, k, v, d.H).out.raw_data());
  set_flops(st, d.flops());
}

void BM_naive_forward(benchmark::State& st) {
  const Dims d = dims(st);
  Tensor q = random({d.B, d.T, d.C()}, 1), k = random({d.B, d.S, d.C()}, 2),
         v = random({d.B, d.S, d.C()}, 3), out = Tensor::empty({d.B, d.T, d.C()});
  Naive naive(d);
  for (auto _ : st) {
    naive.forward(q.data<float>(), k.data<float>(), v.data<float>(), out.data<float>());
    benchmark::DoNotOptimize(out.raw_data());
  }
  set_flops(st, d.flops());
}

void BM_fused_forward_backward(benchmark::State& st) {
  const Dims d = dims(st);
  Tensor q = random({d.B, d.T, d.C()}, 1).set_requires_grad(true);
  Tensor k = random({d.B, d.S, d.C()}, 2).set_requires_grad(true);
  Tensor v = random({d.B, d.S, d.C()}, 3).set_requires_grad(true);
  Tensor g = random({d.B, d.T, d.C()}, 4);
  for (auto _ : st) {
    Tensor out = tfm::attention(q, k, v, d.H).out;
    tfm::autograd::backward(out, g);
    benchmark::DoNotOptimize(q.grad().raw_data());
    q.zero_grad();
    k.zero_grad();
    v.zero_grad();
  }
  set_flops(st, 3.5 * d.flops());
}

void BM_naive_forward_backward(benchmark::State& st) {
  const Dims d = dims(st);
  Tensor q = random({d.B, d.T, d.C()}, 1), k = random({d.B, d.S, d.C()}, 2),
         v = random({d.B, d.S, d.C()}, 3), g = random({d.B, d.T, d.C()}, 4);
  Tensor out = Tensor::empty(q.shape()), dq = Tensor::empty(q.shape()),
         dk = Tensor::empty(k.shape()), dv = Tensor::empty(v.shape());
  Naive naive(d);
  for (auto _ : st) {
    naive.forward(q.data<float>(), k.data<float>(), v.data<float>(), out.data<float>());
    naive.backward(q.data<float>(), k.data<float>(), v.data<float>(), g.data<float>(),
                   dq.data<float>(), dk.data<float>(), dv.data<float>());
    benchmark::DoNotOptimize(dq.raw_data());
  }
  set_flops(st, 3.5 * d.flops());
}

// Args: B, H, T, S, Dh.
void training_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"B", "H", "T", "S", "Dh"});
  b->Args({64, 8, 32, 32, 64});
  b->Args({64, 4, 32, 32, 64});
  b->Args({4, 8, 512, 512, 64});
  b->UseRealTime();
}

void decode_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"B", "H", "T", "S", "Dh"});
  for (int64_t s : {32, 64, 128, 256}) b->Args({128, 8, 1, s, 64});
  b->UseRealTime();
}

BENCHMARK(BM_fused_forward)->Apply(training_shapes)->Apply(decode_shapes);
BENCHMARK(BM_naive_forward)->Apply(training_shapes)->Apply(decode_shapes);
BENCHMARK(BM_fused_forward_backward)->Apply(training_shapes);
BENCHMARK(BM_naive_forward_backward)->Apply(training_shapes);

}  // namespace

BENCHMARK_MAIN();
