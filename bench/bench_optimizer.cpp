// The optimiser phase of one training update — global_grad_norm, Adam::step (clipped scale),
// zero_grad — on a preset model's parameters (vocabulary 8000) after a real backward, which is
// not timed. GB/s counts what a step must move at least: read g, read and write p, m, v.
// Written against the API the trainer calls (Adam, global_grad_norm), so the same file builds
// against a tree from before the parameter arenas. Threads: OpenMP's default; run with
// OMP_NUM_THREADS=2 to match the reference numbers (docs/history/performance.md).
#include <benchmark/benchmark.h>

#include <string>
#include <utility>
#include <vector>

#include "tfm/autograd/tape.h"
#include "tfm/core/parallel.h"
#include "tfm/model/transformer.h"
#include "tfm/ops/cross_entropy.h"
#include "tfm/train/grad_norm.h"
#include "tfm/train/optimizer.h"

namespace {

using tfm::Tensor;

void BM_OptimizerPhase(benchmark::State& state, const char* preset) {
  tfm::ModelConfig c = tfm::ModelConfig::preset(preset);
  c.src_vocab_size = c.trg_vocab_size = 8000;
  tfm::Transformer model(c, 1);
  model.set_training(true);
  std::vector<std::pair<std::string, Tensor>> params;
  for (const auto& [name, p] : model.named_parameters()) params.emplace_back(name, *p);
  tfm::Adam adam(params, tfm::AdamOptions{});
  std::vector<int32_t> ids(8 * 16);  // (8, 16): a small batch, every parameter gets a gradient
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(4 + (i * 7919) % 7990);
  const Tensor x = Tensor::from_vector<int32_t>({8, 16}, ids);
  double norm = 0;
  for (auto _ : state) {
    state.PauseTiming();
    tfm::CrossEntropyResult ce = tfm::softmax_cross_entropy(model.forward(x, x), x, 0.1, 0);
    tfm::autograd::backward(ce.loss);
    state.ResumeTiming();
    norm = tfm::global_grad_norm(params);
    adam.step(1e-5, tfm::clip_coefficient(norm, 1.0));
    adam.zero_grad();
  }
  benchmark::DoNotOptimize(norm);
  state.counters["GB/s"] = benchmark::Counter(7.0 * 4 * model.parameter_count() / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = tfm::get_threads();
}

BENCHMARK_CAPTURE(BM_OptimizerPhase, small, "small")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_OptimizerPhase, base, "base")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
