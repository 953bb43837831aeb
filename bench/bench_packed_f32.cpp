// The packed fp32 decoding kernel (ops/cpu/packed_f32_cpu.h) alone, in GFLOP/s (2·M·N·K per
// weight): one call for each of W distinct weights a round, so they stream from memory as a
// model's layers do in a decoding step, instead of one weight that stays in cache. Threads: the
// `threads` argument (1 or 2 on the dev machine). Run with
//   build/bench/bench_packed_f32 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// and compare with bench_linear's BM_sgemm (the dnnl_sgemm ceiling).
#include <benchmark/benchmark.h>

#include <vector>

#include "tfm/core/cpu_isa.h"
#include "tfm/core/parallel.h"
#include "tfm/core/rng.h"
#include "tfm/ops/cpu/packed_f32_cpu.h"

namespace {

std::vector<float> random_floats(int64_t n, uint64_t seed) {
  tfm::RandomStream rs(seed, 0);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 2.0f * rs.uniform(i) - 1.0f;
  return v;
}

// Arguments: M (rows), N (outputs), K (inputs), W (distinct weights), threads, and cold: 0, one
// input and one output for every weight (they stay in cache); 1, each weight its own (they come
// from memory, as a model's activations do between its layers).
void BM_packed_f32(benchmark::State& st) {
  const int64_t m = st.range(0), n = st.range(1), k = st.range(2), count = st.range(3);
  tfm::set_threads(static_cast<int>(st.range(4)));
  const int64_t buffers = st.range(5) != 0 ? count : 1;
  std::vector<std::vector<float>> xs, ys;
  for (int64_t i = 0; i < buffers; ++i) {
    xs.push_back(random_floats(m * k, 100 + i));
    ys.emplace_back(static_cast<size_t>(m * n));
  }
  std::vector<tfm::cpu::PackedF32> weights;
  for (int64_t i = 0; i < count; ++i)
    weights.push_back(tfm::cpu::pack_f32(n, k, random_floats(n * k, 2 + i).data()));
  for (auto _ : st) {
    for (int64_t i = 0; i < count; ++i)
      tfm::cpu::packed_f32_linear_forward(m, xs[i % buffers].data(), weights[i], nullptr,
                                          tfm::Activation::none, ys[i % buffers].data(),
                                          tfm::cpu_isa());
    benchmark::DoNotOptimize(ys.back().data());
    benchmark::ClobberMemory();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(2e-9 * static_cast<double>(m * n * k * count),
                                              benchmark::Counter::kIsIterationInvariantRate);
}

// Decoding shapes of the `small` (d 256, FFN 1024, 8000 pieces) and `base` (d 512, FFN 2048)
// models: a step's rows (8–128: shards of greedy and beam search) or an encoder chunk's (256:
// model/encode_chunks.h; 1024, a batch encoded whole), the fused QKV, FFN up and down, and the
// vocabulary projection; at 64 rows also cold.
void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K", "W", "threads", "cold"});
  for (int threads : {1, 2}) {
    for (int m : {8, 32, 64, 128, 256, 1024}) {
      for (int cold : {0, 1}) {
        if (cold == 1 && m != 64) continue;
        b->Args({m, 768, 256, 60, threads, cold});
        b->Args({m, 1024, 256, 60, threads, cold});
        b->Args({m, 256, 1024, 60, threads, cold});
        b->Args({m, 2048, 512, 24, threads, cold});
        b->Args({m, 512, 2048, 24, threads, cold});
        b->Args({m, 8000, 256, 4, threads, cold});
      }
    }
  }
  b->UseRealTime();
}

BENCHMARK(BM_packed_f32)->Apply(shapes);

}  // namespace

BENCHMARK_MAIN();
