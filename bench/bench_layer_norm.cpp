// Throughput of the normalisation and loss ops through their public, autograd-recording API.
// GB/s counts the tensor bytes each call must move at least once (parameters and per-row
// statistics are negligible). Threads: OpenMP's default; run with OMP_NUM_THREADS=2 to match
// the reference numbers.
#include <benchmark/benchmark.h>

#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/core/rng.h"
#include "tfm/ops/cross_entropy.h"
#include "tfm/ops/layer_norm.h"

namespace {

using tfm::Tensor;

Tensor uniform(const tfm::Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t = Tensor::empty(shape, tfm::DType::f32);
  tfm::RandomStream rs(seed, 0);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = lo + (hi - lo) * rs.uniform(i);
  return t;
}

void set_counters(benchmark::State& state, double bytes_per_iter) {
  state.counters["GB/s"] =
      benchmark::Counter(bytes_per_iter / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = tfm::get_threads();
}

void BM_LayerNormForward(benchmark::State& state) {
  const int64_t n = state.range(0), c = state.range(1);
  Tensor x = uniform({n, c}, 1, -2, 2), g = uniform({c}, 2, 0.5, 1.5), b = uniform({c}, 3, -1, 1);
  for (auto _ : state) benchmark::DoNotOptimize(tfm::layer_norm(x, g, b, 1e-5).raw_data());
  set_counters(state, 2.0 * n * c * 4);  // read x, write y
}

void BM_LayerNormForwardBackward(benchmark::State& state) {
  const int64_t n = state.range(0), c = state.range(1);
  Tensor x = uniform({n, c}, 1, -2, 2).set_requires_grad(true);
  Tensor g = uniform({c}, 2, 0.5, 1.5).set_requires_grad(true);
  Tensor b = uniform({c}, 3, -1, 1).set_requires_grad(true);
  Tensor dy = uniform({n, c}, 4, -1, 1);
  for (auto _ : state) {
    tfm::autograd::backward(tfm::layer_norm(x, g, b, 1e-5), dy);
    benchmark::DoNotOptimize(x.grad().raw_data());
    for (Tensor* t : {&x, &g, &b}) t->zero_grad();
  }
  set_counters(state, 5.0 * n * c * 4);  // fwd: x, y; bwd: dy, x, dx
}

void BM_AddLayerNormForward(benchmark::State& state) {
  const int64_t n = state.range(0), c = state.range(1);
  Tensor x = uniform({n, c}, 1, -2, 2), r = uniform({n, c}, 5, -2, 2);
  Tensor g = uniform({c}, 2, 0.5, 1.5), b = uniform({c}, 3, -1, 1);
  for (auto _ : state) benchmark::DoNotOptimize(tfm::add_layer_norm(x, r, g, b, 1e-5).y.raw_data());
  set_counters(state, 4.0 * n * c * 4);  // read x, residual; write sum, y
}

void BM_AddLayerNormForwardBackward(benchmark::State& state) {
  const int64_t n = state.range(0), c = state.range(1);
  Tensor x = uniform({n, c}, 1, -2, 2).set_requires_grad(true);
  Tensor r = uniform({n, c}, 5, -2, 2).set_requires_grad(true);
  Tensor g = uniform({c}, 2, 0.5, 1.5).set_requires_grad(true);
  Tensor b = uniform({c}, 3, -1, 1).set_requires_grad(true);
  Tensor dy = uniform({n, c}, 4, -1, 1);
  for (auto _ : state) {
    // Only y's gradient is seeded; the tape hands the sum output a zero gradient, as in a model
    // whose last residual stream value feeds nothing else.
    tfm::autograd::backward(tfm::add_layer_norm(x, r, g, b, 1e-5).y, dy);
    benchmark::DoNotOptimize(x.grad().raw_data());
    for (Tensor* t : {&x, &r, &g, &b}) t->zero_grad();
  }
  // fwd: x, residual, sum, y; bwd: dy, dsum, sum, dx (x and residual share it)
  set_counters(state, 8.0 * n * c * 4);
}

void BM_CrossEntropyForward(benchmark::State& state) {
  const int64_t n = state.range(0), v = state.range(1);
  Tensor logits = uniform({n, v}, 6, -8, 8);
  Tensor t = Tensor::empty({n}, tfm::DType::i32);
  for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = static_cast<int32_t>((i * 7919) % v);
  for (auto _ : state)
    benchmark::DoNotOptimize(tfm::softmax_cross_entropy(logits, t, 0.1).loss.raw_data());
  set_counters(state, 1.0 * n * v * 4);  // read logits
}

void BM_CrossEntropyForwardBackward(benchmark::State& state) {
  const int64_t n = state.range(0), v = state.range(1);
  Tensor logits = uniform({n, v}, 6, -8, 8).set_requires_grad(true);
  Tensor t = Tensor::empty({n}, tfm::DType::i32);
  for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = static_cast<int32_t>((i * 7919) % v);
  for (auto _ : state) {
    tfm::autograd::backward(tfm::softmax_cross_entropy(logits, t, 0.1).loss);
    benchmark::DoNotOptimize(logits.grad().raw_data());
    logits.zero_grad();
  }
  set_counters(state, 3.0 * n * v * 4);  // fwd: logits; bwd: logits, dlogits
}

}  // namespace

BENCHMARK(BM_LayerNormForward)
    ->Args({2048, 512})
    ->Args({4096, 1024})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_LayerNormForwardBackward)
    ->Args({2048, 512})
    ->Args({4096, 1024})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_AddLayerNormForward)
    ->Args({2048, 512})
    ->Args({4096, 1024})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_AddLayerNormForwardBackward)
    ->Args({2048, 512})
    ->Args({4096, 1024})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_CrossEntropyForward)->Args({2048, 8000})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_CrossEntropyForwardBackward)
    ->Args({2048, 8000})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

BENCHMARK_MAIN();
