// fp32 vs bf16 vs int8 inference linear (bias + ReLU, as an FFN layer) at decoding and training
// row counts. GFLOP/s counts 2·M·N·K per call for every precision, so the ratios between rows of
// the same shape are the speedups. BM_decode times a whole model's decoding steps. The
// low-precision timings include converting or quantising x on the way in (part of every call); the
// weights are prepared once, outside the timed loop. Run
//   build/bench/bench_precision --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "tfm/autograd/grad_mode.h"
#include "tfm/core/parallel.h"
#include "tfm/core/rng.h"
#include "tfm/data/batch.h"
#include "tfm/model/transformer.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/linear.h"
#include "tfm/ops/linear_lowp.h"

namespace {

using namespace tfm;
using tfm::Activation;
using tfm::ComputeType;
using tfm::DType;
using tfm::Tensor;

Tensor random_f32(const tfm::Shape& shape, uint64_t seed, float scale) {
  tfm::RandomStream rs(seed, 0);
  Tensor t = Tensor::empty(shape, DType::f32);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = scale * (2.0f * rs.uniform(i) - 1.0f);
  return t;
}

void BM_linear(benchmark::State& st, ComputeType precision) {
  const int64_t m = st.range(0), n = st.range(1), k = st.range(2);
  const Tensor x = random_f32({m, k}, 1, 1.0f), w = random_f32({n, k}, 2, 0.05f),
               b = random_f32({n}, 3, 0.1f);
  tfm::NoGradGuard no_grad;
  if (precision == ComputeType::float32) {
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

BENCHMARK_CAPTURE(BM_linear, fp32, ComputeType::float32)->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear, bf16, ComputeType::bfloat16)->Apply(shapes);
BENCHMARK_CAPTURE(BM_linear, int8, ComputeType::int8)->Apply(shapes);

// The inference kernels on the same problem, called directly: tfm's packed fp32 and bf16 panels,
// and the int8 kernel this CPU's level picks (oneDNN with VNNI, tfm's panels without); bias +
// ReLU. The shapes are the linear layers of the small and base presets (N × K:
// attention and FFN projections and the 8000-word output layer) at decode row counts (16
// sentences a thread, × 4 for beam 4, up to the encoder's 16 × 33 = 528). Run single-threaded
// (TFM_THREADS=1), as decoding runs each shard of 16 sentences on one thread:
//   TFM_THREADS=1 build/bench/bench_precision --benchmark_filter=BM_kernel
enum class Kernel { f32_packed, tfm_bf16, int8 };

void BM_kernel(benchmark::State& st, Kernel kernel) {
  const int64_t m = st.range(0), n = st.range(1), k = st.range(2);
  const Tensor x = random_f32({m, k}, 1, 1.0f), w = random_f32({n, k}, 2, 0.05f),
               b = random_f32({n}, 3, 0.1f);
  Tensor y = Tensor::empty({m, n});
  const auto packed = tfm::cpu::pack_weights(kernel == Kernel::f32_packed ? tfm::ComputeType::float32
                                             : kernel == Kernel::tfm_bf16 ? tfm::ComputeType::bfloat16
                                                                          : tfm::ComputeType::int8,
                                             n, k, w.data<float>());
  for (auto _ : st) {
    switch (kernel) {
      case Kernel::f32_packed:
        tfm::cpu::packed_f32_linear_forward(m, x.data<float>(), packed->f32, b.data<float>(),
                                            tfm::Activation::relu, y.data<float>());
        break;
      case Kernel::int8:
        tfm::cpu::lowp_linear_forward(m, x.data<float>(), *packed, b.data<float>(),
                                      tfm::Activation::relu, y.data<float>());
        break;
      case Kernel::tfm_bf16:
        tfm::cpu::packed_bf16_linear_forward(m, x.data<float>(), packed->bf16, b.data<float>(),
                                             tfm::Activation::relu, y.data<float>());
        break;
    }
    benchmark::DoNotOptimize(y.data<float>());
  }
  st.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * m * n * k * static_cast<double>(st.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void decode_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "N", "K"});
  for (int64_t m : {16, 32, 64, 128, 528})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{256, 256},
                        {1024, 256},
                        {256, 1024},
                        {8000, 256},
                        {512, 512},
                        {2048, 512},
                        {512, 2048},
                        {8000, 512}})
      b->Args({m, n, k});
  b->UseRealTime();
  b->MinTime(0.1);
}

BENCHMARK_CAPTURE(BM_kernel, f32_packed, Kernel::f32_packed)->Apply(decode_shapes);
BENCHMARK_CAPTURE(BM_kernel, tfm_bf16, Kernel::tfm_bf16)->Apply(decode_shapes);
BENCHMARK_CAPTURE(BM_kernel, int8, Kernel::int8)->Apply(decode_shapes);

// End to end: a random model of the `small` (d 256, ff 1024, 3 + 3 layers) or `base` (d 512,
// ff 2048, 6 + 6 layers) preset with a vocabulary of 8000 encodes 32 sources of 32 tokens and
// decodes exactly 32 steps for each (fixed input tokens, so every precision does the same work);
// counter tok/s = generated tokens per second.
void BM_decode(benchmark::State& st, const char* preset, ComputeType precision) {
  constexpr int64_t kBatch = 32, kLen = 32, kVocab = 8000;
  ModelConfig c = ModelConfig::preset(preset);
  c.dropout = 0.0;
  c.src_vocab_size = c.trg_vocab_size = kVocab;
  c.max_length = 256;
  Transformer model(c, 1);
  model.bind_inference(precision);
  tfm::RandomStream rs(5, 0);
  std::vector<Ids> src(kBatch, Ids(kLen));
  uint64_t i = 0;
  for (Ids& s : src)
    for (int32_t& t : s) t = 3 + static_cast<int32_t>(rs.uniform(i++) * (kVocab - 3));
  std::vector<const Ids*> ptrs;
  for (const Ids& s : src) ptrs.push_back(&s);
  const Tensor src_t = source_batch(ptrs, c.seq_format());
  tfm::NoGradGuard no_grad;
  for (auto _ : st) {
    DecoderState state = model.start(src_t);
    std::vector<int32_t> tok(kBatch, static_cast<int32_t>(c.bos_id));
    for (int64_t t = 0; t < kLen; ++t) {
      Tensor logits = model.step(state, Tensor::from_vector<int32_t>({kBatch}, tok));  // (B, V)
      benchmark::DoNotOptimize(logits.data<float>());
      for (int64_t b = 0; b < kBatch; ++b)
        tok[b] = static_cast<int32_t>(3 + (b * 31 + t * 7) % 4000);
    }
  }
  st.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(kBatch * kLen) * static_cast<double>(st.iterations()),
                         benchmark::Counter::kIsRate);
}

#define TFM_DECODE_BENCH(preset, prec)                                              \
  BENCHMARK_CAPTURE(BM_decode, preset##_##prec, #preset, parse_compute_type(#prec)) \
      ->Unit(benchmark::kMillisecond)                                               \
      ->UseRealTime()
TFM_DECODE_BENCH(small, fp32);
TFM_DECODE_BENCH(small, bf16);
TFM_DECODE_BENCH(small, int8);
TFM_DECODE_BENCH(base, fp32);
TFM_DECODE_BENCH(base, bf16);
TFM_DECODE_BENCH(base, int8);

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
