// Incremental decoding: the per-step time must stay flat as the output grows (the decoder reads
// its self-attention KV cache instead of recomputing the prefix), and greedy / beam 4 throughput.
// A `small`-sized random model: d 256, 4 heads, ff 1024, 3 + 3 layers, vocab 8000; batch 32,
// sources of 32 tokens.
//
//   build/bench/bench_decode --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// BM_Search runs with --precision fp32 (0) or bf16 (1) linear layers: the `prec` argument.
//
// BM_StepTime: counters early_ms / late_ms are the mean step times over steps 1–8 and 57–64
// (late/early ≈ 1 means flat); step_ms is the mean over all 64; sN_ms is step N alone.
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tfm/autograd/grad_mode.h"
#include "tfm/core/parallel.h"
#include "tfm/core/rng.h"
#include "tfm/decode/search.h"
#include "tfm/model/transformer.h"

namespace {

using namespace tfm;

constexpr int64_t kBatch = 32, kSrcLen = 32, kSteps = 64, kVocab = 8000;

std::unique_ptr<Transformer> make_model() {
  ModelConfig c = ModelConfig::preset("small");
  c.d_model = 256, c.heads = 4, c.d_ff = 1024, c.encoder_layers = 3, c.decoder_layers = 3;
  c.dropout = 0.0;
  c.src_vocab_size = c.trg_vocab_size = kVocab;
  c.max_length = 256;
  return std::make_unique<Transformer>(c, 1);
}

// The same random weights for both precisions; each model is built on first use.
const Transformer& model(ComputeType precision = ComputeType::float32) {
  if (precision == ComputeType::bfloat16) {
    static std::unique_ptr<Transformer> bf16 = [] {
      auto m = make_model();
      m->bind_inference(ComputeType::bfloat16);
      return m;
    }();
    return *bf16;
  }
  static std::unique_ptr<Transformer> fp32 = [] {
    auto m = make_model();
    m->bind_inference(ComputeType::float32);  // decoding steps on packed weights, as tfm translate
    return m;
  }();
  return *fp32;
}

std::vector<Ids> sources() {
  RandomStream rs(5, 0);
  std::vector<Ids> out(kBatch, Ids(kSrcLen));
  uint64_t i = 0;
  for (Ids& s : out)
    for (int32_t& t : s) t = 3 + static_cast<int32_t>(rs.uniform(i++) * (kVocab - 3));
  return out;
}

void BM_StepTime(benchmark::State& state) {
  const Transformer& m = model();
  NoGradGuard ng;
  std::vector<Ids> src = sources();
  std::vector<const Ids*> ptrs;
  for (const Ids& s : src) ptrs.push_back(&s);
  const ModelConfig& c = m.config();
  Tensor src_t = source_batch(ptrs, c.seq_format());
  std::vector<double> per_step(kSteps, 0.0);
  int64_t runs = 0;
  for (auto _ : state) {
    DecoderState st = m.start(src_t);
    std::vector<int32_t> tok(kBatch, static_cast<int32_t>(c.bos_id));
    for (int64_t t = 0; t < kSteps; ++t) {
      const auto t0 = std::chrono::steady_clock::now();
      Tensor logits = m.step(st, Tensor::from_vector<int32_t>({kBatch}, tok));  // (B, V)
      benchmark::DoNotOptimize(logits.data<float>());
      per_step[t] +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      for (int64_t b = 0; b < kBatch; ++b)
        tok[b] = static_cast<int32_t>(3 + (b * 31 + t * 7) % 4000);
    }
    ++runs;
  }
  auto mean = [&](int64_t a, int64_t b) {  // steps a..b, 1-based
    double s = 0;
    for (int64_t t = a - 1; t < b; ++t) s += per_step[t];
    return s / static_cast<double>((b - a + 1) * runs);
  };
  state.counters["early_ms"] = mean(1, 8);
  state.counters["late_ms"] = mean(57, 64);
  state.counters["step_ms"] = mean(1, kSteps);
  state.counters["late_over_early"] = mean(57, 64) / mean(1, 8);
  for (int64_t t : {1, 16, 32, 48, 64}) {
    std::string name = "s";  // (not "s" + to_string: GCC 12 warns falsely on that)
    name += std::to_string(t);
    name += "_ms";
    state.counters[name] = mean(t, t);
  }
}

// Output tokens (with EOS) a second for a full search over the batch. min_length keeps every
// output near kSteps tokens so greedy and beam do comparable work.
void BM_Search(benchmark::State& state) {
  const Transformer& m = model(state.range(1) == 1 ? ComputeType::bfloat16 : ComputeType::float32);
  decode::SearchOptions o;
  o.beam_size = state.range(0);
  o.max_length = kSteps;
  o.min_length = kSteps - 8;
  auto search = decode::make_search(o);
  std::vector<Ids> src = sources();
  int64_t tokens = 0;
  for (auto _ : state) {
    std::vector<decode::NBest> r = search->run(m, src);
    for (const auto& nb : r) tokens += static_cast<int64_t>(nb[0].tokens.size()) + 1;
  }
  state.counters["tokens_per_second"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_StepTime)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Search)
    ->ArgsProduct({{1, 4}, {0, 1}})
    ->ArgNames({"beam", "prec"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
