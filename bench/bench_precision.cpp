// fp32 vs bf16 vs int8 inference linear (bias + ReLU, as an FFN layer) at decoding and training
// row counts. GFLOP/s counts 2·M·N·K per call for every precision, so the ratios between rows of
// the same shape are the speedups. The low-precision timings include converting or quantising x
// on the way in (part of every call); the weights are prepared once, outside the timed loop. Run
//   build/bench/bench_precision --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "tfm/autograd/grad_mode.h"
#include "tfm/core/parallel.h"
#include "tfm/core/rng.h"
#include "tfm/ops/linear.h"
#include "tfm/ops/linear_lowp.h"

namespace {

using tfm::Activation;
using tfm::DType;
using tfm::Precision;
using tfm::Tensor;

Tensor random_f32(const tfm::Shape& shape, uint64_t seed, float scale) {
  tfm::RandomStream rs(seed, 0);
  Tensor t = Tensor::empty(shape, DType::f32);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = scale * (2.0f * rs.uniform(i) - 1.0f);
  return t;
}

void BM_linear(benchmark::State& st, Precision precision) {
  const int64_t m = st.range(0), n = st.range(1), k = st.range(2);
  const Tensor x = random_f32({m, k}, 1, 1.0f), w = random_f32({n, k}, 2, 0.05f),
               b = random_f32({n}, 3, 0.1f);
  tfm::NoGradGuard no_grad;
  if (precision == Precision::fp32) {
    for (auto _ : st) {
      Tensor y = tfm::linear(x, w, b, Activation::relu);
      benchmark::DoNotOptimize(y.data<float>());
    }
  } else {
    const tfm::LowpWeight packed(w, precision);
    for (auto _ : st) {
      Tensor y = tfm::linear_lowp(x, packed, b, Activation::relu);
      benchmark::DoNotOptimize(y.data<float>());
    }
  }
  st.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * m * n * k * static_cast<double>(st.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K"});
  for (int64_t m : {32, 128, 2048})  // decoding 32 / 128 rows (sentences × beams); training
    for (int64_t n : {512, 2048})
      for (int64_t k : {512, 2048}) b->Args({m, n, k});
  b->UseRealTime();
  b->MinTime(0.2);
}

BENCHMARK_CAPTURE(BM_linear, fp32, Precision::fp32)->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear, bf16, Precision::bf16)->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear, int8, Precision::int8)->Apply(shapes);

}  // namespace

int main(int argc, char** argv) {
  // 2 threads as the project's other figures; TFM_THREADS overrides.
  const char* env = std::getenv("TFM_THREADS");
  tfm::set_threads(env != nullptr ? std::atoi(env) : 2);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
