// linear vs raw dnnl_sgemm on a training-sized and a decode-sized projection, 2 threads.
// Every benchmark reports GFLOP/s (2·M·N·K per call; bias and activation count as free) so
// tfm::linear can be read directly as a fraction of the GEMM it wraps. Run with
//   build/bench/bench_linear --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>

#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/core/rng.h"
#include "tfm/ops/cpu/linear_cpu.h"
#include "tfm/ops/linear.h"

namespace {

using tfm::Activation;
using tfm::DType;
using tfm::Tensor;

Tensor random_f32(const tfm::Shape& shape, uint64_t seed) {
  tfm::RandomStream rs(seed, 0);
  Tensor t = Tensor::empty(shape, DType::f32);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = 2.0f * rs.uniform(i) - 1.0f;
  return t;
}

// Problem (M, N, K) = (rows, out_features, in_features) from the benchmark's arguments.
struct Problem {
  int64_t m, n, k;
  Tensor x, w, b;
  explicit Problem(const benchmark::State& st)
      : m(st.range(0)),
        n(st.range(1)),
        k(st.range(2)),
        x(random_f32({m, k}, 1)),
        w(random_f32({n, k}, 2)),
        b(random_f32({n}, 3)) {}
};

void report_gflops(benchmark::State& st, double flops_per_iter) {
  st.counters["GFLOP/s"] = benchmark::Counter(
      flops_per_iter * static_cast<double>(st.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// The baseline: y = x·Wᵀ by one dnnl_sgemm call, no bias.
void BM_sgemm(benchmark::State& st) {
  Problem p(st);
  Tensor y = Tensor::empty({p.m, p.n});
  for (auto _ : st) {
    dnnl_sgemm('N', 'T', p.m, p.n, p.k, 1.0f, p.x.data<float>(), p.k, p.w.data<float>(), p.k, 0.0f,
               y.data<float>(), p.n);
    benchmark::DoNotOptimize(y.data<float>());
  }
  report_gflops(st, 2.0 * p.m * p.n * p.k);
}

// tfm::linear in inference mode (the fused primitive path), with bias and the given activation.
void BM_linear(benchmark::State& st, Activation act) {
  Problem p(st);
  tfm::NoGradGuard no_grad;
  for (auto _ : st) {
    Tensor y = tfm::linear(p.x, p.w, p.b, act);
    benchmark::DoNotOptimize(y.data<float>());
  }
  report_gflops(st, 2.0 * p.m * p.n * p.k);
}

// The kernel with its f32 path forced, to compare the fused primitive with sgemm + one pass.
void BM_linear_path(benchmark::State& st, tfm::cpu::LinearPath path, Activation act) {
  Problem p(st);
  Tensor y = Tensor::empty({p.m, p.n});
  for (auto _ : st) {
    tfm::cpu::linear_forward<float>(p.m, p.n, p.k, p.x.data<float>(), p.w.data<float>(),
                                    p.b.data<float>(), act, y.data<float>(), path);
    benchmark::DoNotOptimize(y.data<float>());
  }
  report_gflops(st, 2.0 * p.m * p.n * p.k);
}

// A training step of the layer: forward in grad mode plus dX, dW and db (3 GEMMs of 2·M·N·K).
void BM_linear_train(benchmark::State& st, Activation act) {
  Problem p(st);
  p.x.set_requires_grad(true);
  p.w.set_requires_grad(true);
  p.b.set_requires_grad(true);
  Tensor gy = random_f32({p.m, p.n}, 4);
  for (auto _ : st) {
    Tensor y = tfm::linear(p.x, p.w, p.b, act);
    tfm::autograd::backward(y, gy);
    p.x.zero_grad();
    p.w.zero_grad();
    p.b.zero_grad();
  }
  report_gflops(st, 3 * 2.0 * p.m * p.n * p.k);
}

using tfm::cpu::LinearPath;

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K"});
  b->Args({2048, 2048, 512});  // (2048×512)·(512×2048): a training batch through an FFN layer
  b->Args({32, 2048, 512});    // (32×512)·(512×2048): one decoding step of 32 beams
  b->UseRealTime();
}

// Where the automatic f32 path switches (cpu::linear_forward: sgemm up to 8 rows, primitive
// above): both paths on few-row problems, the FFN up- and down-projection of a 512-wide model.
void small_m(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K"});
  for (int m : {1, 4, 8, 16, 32})
    for (auto [n, k] : {std::pair{2048, 512}, std::pair{512, 2048}}) b->Args({m, n, k});
  b->UseRealTime();
}

BENCHMARK(BM_sgemm)->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear, bias, Activation::none)->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear, bias_relu, Activation::relu)->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear, bias_gelu, Activation::gelu)->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear_path, primitive_bias, LinearPath::primitive, Activation::none)
    ->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear_path, sgemm_bias, LinearPath::sgemm, Activation::none)->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear_path, primitive_bias_relu, LinearPath::primitive, Activation::relu)
    ->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear_path, sgemm_bias_relu, LinearPath::sgemm, Activation::relu)
    ->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear_train, bias_relu, Activation::relu)->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear_train, bias_gelu, Activation::gelu)->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear_path, small_m_primitive_bias_relu, LinearPath::primitive,
                  Activation::relu)
    ->Apply(small_m);
BENCHMARK_CAPTURE(BM_linear_path, small_m_sgemm_bias_relu, LinearPath::sgemm, Activation::relu)
    ->Apply(small_m);

}  // namespace

int main(int argc, char** argv) {
  // The project's acceptance numbers are for 2 threads; TFM_THREADS overrides for exploration.
  const char* env = std::getenv("TFM_THREADS");
  tfm::set_threads(env != nullptr ? std::atoi(env) : 2);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
