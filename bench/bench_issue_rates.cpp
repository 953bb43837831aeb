// How many of the GEMM kernels' multiply instructions one core issues a second: the f32 FMA
// (vfmadd231ps ymm: 8 multiply-adds) against the int8 paths' vpmaddwd (16 s16 products summed in
// pairs) and vpmaddubsw (32 u8 × s8 products summed in pairs), 12 independent chains so that
// latency does not bound them. Where the FMA issues twice a cycle and vpmaddwd once (Zen 2), int8
// without VNNI multiplies no faster than f32 (docs/performance.md); the FMA rate / 2 is also the
// core's clock under load. BM_u8s8_pair: the usual AVX2 u8 × s8 step (vpmaddubsw, vpmaddwd
// against ones to widen its 16-bit sums, vpaddd into s32): 32 multiply-adds a pair. Run
//   build/bench/bench_issue_rates --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <immintrin.h>

namespace {

constexpr int kChains = 12;
constexpr int kRounds = 1 << 16;

void count(benchmark::State& st, const char* what = "instructions/s") {
  st.counters[what] = benchmark::Counter(static_cast<double>(kChains) * kRounds,
                                         benchmark::Counter::kIsIterationInvariantRate);
}

// kChains accumulators of different values (equal ones would be computed once, init(i)), kRounds
// rounds an iteration of a = op(a, w); `w` is hidden from the compiler each round (the empty asm)
// so that it can neither fold nor hoist the chains.
template <typename V, typename Init, typename Op>
void chains(benchmark::State& st, V w, Init init, Op op, const char* what = "instructions/s") {
  V acc[kChains];
  for (auto _ : st) {
    for (int i = 0; i < kChains; ++i) acc[i] = init(i);
    for (int r = 0; r < kRounds; ++r) {
#pragma GCC unroll 12
      for (V& a : acc) a = op(a, w);
      asm volatile("" : "+x"(w));
    }
    for (V& a : acc) benchmark::DoNotOptimize(a);
  }
  count(st, what);
}

void BM_vfmadd231ps(benchmark::State& st) {
  const __m256 half = _mm256_set1_ps(0.5f);
  chains(
      st, _mm256_set1_ps(0.999f), [](int i) { return _mm256_set1_ps(static_cast<float>(i)); },
      [&](__m256 a, __m256 w) { return _mm256_fmadd_ps(a, w, half); });
}

void BM_vpmaddwd(benchmark::State& st) {
  chains(
      st, _mm256_set1_epi16(3), [](int i) { return _mm256_set1_epi16(static_cast<int16_t>(i)); },
      [](__m256i a, __m256i w) { return _mm256_madd_epi16(a, w); });
}

void BM_vpmaddubsw(benchmark::State& st) {
  chains(
      st, _mm256_set1_epi8(3), [](int i) { return _mm256_set1_epi8(static_cast<char>(i)); },
      [](__m256i a, __m256i w) { return _mm256_maddubs_epi16(a, w); });
}

void BM_u8s8_pair(benchmark::State& st) {
  const __m256i ones = _mm256_set1_epi16(1);
  chains(
      st, _mm256_set1_epi8(3), [](int i) { return _mm256_set1_epi8(static_cast<char>(i)); },
      [&](__m256i a, __m256i w) {
        return _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_maddubs_epi16(a, w), ones));
      },
      "pairs/s");
}

BENCHMARK(BM_vfmadd231ps);
BENCHMARK(BM_vpmaddwd);
BENCHMARK(BM_vpmaddubsw);
BENCHMARK(BM_u8s8_pair);

}  // namespace

BENCHMARK_MAIN();
