// Model benchmarks: the analytic GEMM FLOP counts against hand-derived values and against each
// other, and short real runs whose token counts and JSON follow from the options.
#include <nlohmann/json.hpp>

#include "support/test_util.h"
#include "tfm/perf/model_bench.h"

namespace tfm::perf {
namespace {

ModelConfig toy() {
  ModelConfig c = ModelConfig::preset("tiny");
  c.d_model = 4, c.heads = 2, c.d_ff = 8, c.encoder_layers = 1, c.decoder_layers = 1;
  c.src_vocab_size = c.trg_vocab_size = 10;
  return c;
}

TEST(ModelBench, ForwardFlopsMatchAHandCount) {
  // d 4, ff 8, V 10, one layer each, B 1, S 2, T 3; multiply-adds (×2 for FLOPs):
  //   encoder, per token q k v o 4·16 + FFN 2·4·8 = 128, ×2 tokens = 256; QKᵀ and PV 2·2·2·4 = 32
  //   decoder, per token self q k v o 64 + cross q o 32 + FFN 64 = 160, ×3 = 480; cross k v on
  //   the 2 source tokens 2·32 = 64; self QKᵀ, PV 2·3·3·4 = 72; cross 2·3·2·4 = 48
  //   output 3·4·10 = 120
  // (256 + 32 + 480 + 64 + 72 + 48 + 120) · 2 = 2144.
  EXPECT_DOUBLE_EQ(forward_gemm_flops(toy(), 1, 2, 3), 2144.0);
  // Batch scales everything linearly.
  EXPECT_DOUBLE_EQ(forward_gemm_flops(toy(), 5, 2, 3), 5 * 2144.0);
}

TEST(ModelBench, OneDecodeStepIsAForwardOverOnePosition) {
  const ModelConfig c = ModelConfig::preset("small");
  ModelConfig v = c;
  v.src_vocab_size = v.trg_vocab_size = 8000;
  EXPECT_DOUBLE_EQ(decode_gemm_flops(v, 7, 33, {7}), forward_gemm_flops(v, 7, 33, 1));
  // A second step adds the per-token work again, with attention over 2 keys instead of 1.
  const double one = decode_gemm_flops(v, 7, 33, {7});
  const double two = decode_gemm_flops(v, 7, 33, {7, 7});
  const double d = 256;
  const double extra_keys = 3 /*layers*/ * 4 * 7 * 1 * d;  // one more key for 7 rows
  EXPECT_DOUBLE_EQ(two - one,
                   forward_gemm_flops(v, 7, 33, 1) - forward_gemm_flops(v, 7, 33, 0) + extra_keys);
}

TEST(ModelBench, BenchFlopsFollowTheModes) {
  ModelConfig c = ModelConfig::preset("small");
  c.src_vocab_size = c.trg_vocab_size = 8000;
  ModelBenchOptions o;
  o.mode = BenchMode::train;
  EXPECT_DOUBLE_EQ(model_gemm_flops(c, o), 3 * forward_gemm_flops(c, 64, 32, 32));
  o.mode = BenchMode::greedy;
  EXPECT_DOUBLE_EQ(model_gemm_flops(c, o),
                   decode_gemm_flops(c, 32, 33, std::vector<int64_t>(33, 32)));
  o.mode = BenchMode::beam;
  std::vector<int64_t> rows(33, 128);
  rows[0] = 32;
  EXPECT_DOUBLE_EQ(model_gemm_flops(c, o), decode_gemm_flops(c, 32, 33, rows));
}

ModelBenchOptions quick(BenchMode mode) {
  ModelBenchOptions o;
  o.preset = "tiny";
  o.mode = mode;
  o.threads = 2;
  o.warmup = 1;
  o.repeats = 3;
  o.vocab = 50;
  o.batch_size = 5;
  o.seq_len = 6;
  o.beam_size = 3;
  o.shard_size = 2;
  o.measure_ceiling = false;
  return o;
}

TEST(ModelBench, RunsCountTheirTokensAndReportJson) {
  for (BenchMode mode : {BenchMode::train, BenchMode::greedy, BenchMode::beam}) {
    const ModelBenchResult r = run_model_bench(quick(mode));
    // Training counts source + target tokens; decoding exactly seq_len tokens a sentence (the
    // run itself checks every output's length).
    EXPECT_EQ(r.tokens, mode == BenchMode::train ? 2 * 5 * 6 : 5 * 6) << to_string(mode);
    ASSERT_EQ(r.seconds.size(), 3u);
    std::vector<double> s = r.seconds;
    std::sort(s.begin(), s.end());
    EXPECT_DOUBLE_EQ(r.median_seconds, s[1]);
    EXPECT_DOUBLE_EQ(r.tokens_per_second, static_cast<double>(r.tokens) / s[1]);
    EXPECT_EQ(r.mfu, 0.0);  // no ceiling measured
    EXPECT_GT(r.peak_rss_mb, 0.0);
    const nlohmann::json j = nlohmann::json::parse(r.to_json());
    EXPECT_EQ(j["mode"], to_string(mode));
    EXPECT_EQ(j["preset"], "tiny");
    EXPECT_EQ(j["device"], "cpu");
    EXPECT_EQ(j["threads"], 2);
    EXPECT_DOUBLE_EQ(j["tokens_per_second"].get<double>(), r.tokens_per_second);
    EXPECT_EQ(j["times_s"].size(), 3u);
    for (const char* key : {"peak_rss_mb", "mfu", "gflops", "median_s"})
      EXPECT_TRUE(j.contains(key)) << key;
  }
}

TEST(ModelBench, CeilingAndMfu) {
  ModelBenchOptions o = quick(BenchMode::greedy);
  o.measure_ceiling = true;
  const ModelBenchResult r = run_model_bench(o);
  EXPECT_GT(r.sgemm_gflops, 0.0);
  EXPECT_DOUBLE_EQ(r.mfu, r.gflops / r.sgemm_gflops);
  EXPECT_DOUBLE_EQ(r.gflops, r.gemm_flops / r.median_seconds / 1e9);
}

TEST(ModelBench, BadOptionsAreNamed) {
  ModelBenchOptions o = quick(BenchMode::train);
  o.repeats = 0;
  EXPECT_TFM_ERROR(run_model_bench(o), "repeats must be positive");
  o = quick(BenchMode::train);
  o.preset = "huge";
  EXPECT_TFM_ERROR(run_model_bench(o), "unknown preset \"huge\"");
  o = quick(BenchMode::train);
  o.vocab = 3;
  EXPECT_TFM_ERROR(run_model_bench(o), "vocabulary must exceed");
  EXPECT_TFM_ERROR(parse_bench_mode("sample"), "unknown mode \"sample\"");
}

}  // namespace
}  // namespace tfm::perf
