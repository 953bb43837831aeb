// A search step's vocabulary-wide work on the CPU, per value of a row: log-softmax
// (cpu::log_softmax_row: max, the exp sum in double, the write), its exp sum alone
// (cpu::exp_shifted_sum_f64) and the top-k scan (cpu::top_k_row, k = 8: beam 4's candidates).
// Rows of V = 8000 (the Multi30k models) and 58101 (OPUS-MT's vocabulary), logits ~ N(0, 3);
// one row at a time, in cache as in decode_steps.cpp. And a greedy step's whole op over 64 rows
// (k = 2: the token and an end token), with scores (top_k_log_probs) and without (top_k_logits).
// Run
//   build/bench/bench_search_steps --benchmark_repetitions=3
//   --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "tfm/core/tensor.h"
#include "tfm/ops/cpu/decode_steps_cpu.h"
#include "tfm/ops/cpu/softmax_cpu.h"
#include "tfm/ops/decode_steps.h"

namespace {

std::vector<float> logits(int64_t v) {
  std::mt19937 gen(1);
  std::normal_distribution<float> normal(0.f, 3.f);
  std::vector<float> x(static_cast<size_t>(v));
  for (float& e : x) e = normal(gen);
  return x;
}

// Seconds a value of the row (printed with an SI prefix: 1.3n is 1.3 ns).
void per_value(benchmark::State& st, int64_t v) {
  st.counters["s/value"] =
      benchmark::Counter(static_cast<double>(v), benchmark::Counter::kIsIterationInvariantRate |
                                                     benchmark::Counter::kInvert);
}

void BM_log_softmax_row(benchmark::State& st) {
  const int64_t v = st.range(0);
  const std::vector<float> x = logits(v);
  std::vector<float> y(x.size());
  for (auto _ : st) {
    tfm::cpu::log_softmax_row<float>(v, x.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  per_value(st, v);
}

void BM_exp_shifted_sum_f64(benchmark::State& st) {
  const int64_t v = st.range(0);
  const std::vector<float> x = logits(v);
  const float m = *std::max_element(x.begin(), x.end());
  for (auto _ : st) benchmark::DoNotOptimize(tfm::cpu::exp_shifted_sum_f64<false>(x.data(), v, m));
  per_value(st, v);
}

void BM_top_k_row(benchmark::State& st) {
  const int64_t v = st.range(0), k = 8;
  const std::vector<float> x = logits(v);
  std::vector<int32_t> ids(k);
  std::vector<float> vals(k);
  for (auto _ : st) {
    tfm::cpu::top_k_row(x.data(), v, k, ids.data(), vals.data());
    benchmark::DoNotOptimize(vals.data());
  }
  per_value(st, v);
}

// A greedy step's (64 rows, V) top 2, seconds a value; range(1): 1 with scores, 0 without.
void BM_greedy_step_top_k(benchmark::State& st) {
  const int64_t v = st.range(0), rows = 64;
  std::vector<float> x;
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<float> row = logits(v);
    x.insert(x.end(), row.begin(), row.end());
  }
  const tfm::Tensor t = tfm::Tensor::from_vector<float>({rows, v}, x);
  const std::vector<tfm::StepRule> rules(static_cast<size_t>(rows), tfm::StepRule::normal);
  for (auto _ : st) {
    const tfm::TopK top =
        st.range(1) ? tfm::top_k_log_probs(t, rules, {}, 2) : tfm::top_k_logits(t, rules, {}, 2);
    benchmark::DoNotOptimize(top.values.data<float>());
  }
  per_value(st, v * rows);
}

BENCHMARK(BM_greedy_step_top_k)->ArgNames({"V", "scores"})->ArgsProduct({{8000, 58101}, {1, 0}});
BENCHMARK(BM_log_softmax_row)->ArgName("V")->Arg(8000)->Arg(58101);
BENCHMARK(BM_exp_shifted_sum_f64)->ArgName("V")->Arg(8000)->Arg(58101);
BENCHMARK(BM_top_k_row)->ArgName("V")->Arg(8000)->Arg(58101);

}  // namespace

BENCHMARK_MAIN();
