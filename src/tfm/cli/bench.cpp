// tfm bench --preset small|base [--mode train|greedy|beam] [--precision P] [--device cpu|cuda]
// [--threads N] [--json]
// [--repeat K]:
// whole-model throughput on random ids (tfm/perf/model_bench.h). With --json the last stdout
// line is one JSON object.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "tfm/cli/commands.h"
#include "tfm/core/parallel.h"
#include "tfm/core/validate.h"
#include "tfm/perf/model_bench.h"

namespace tfm::cli {

void add_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Training / translation throughput of a preset model");
  static std::string preset, mode = "train";
  static perf::ModelBenchOptions o;
  static bool json = false, no_ceiling = false;
  static std::string device = "cpu";
  cmd->add_option("--preset", preset, "Model size: tiny, small, base or big")->required();
  cmd->add_option("--mode", mode, "train, greedy or beam")
      ->check(CLI::IsMember({"train", "greedy", "beam"}));
  cmd->add_option("--threads", o.threads, "Threads (0: all cores)");
  cmd->add_option("--repeat", o.repeats, "Timed repeats (the median is reported)");
  cmd->add_option("--warmup", o.warmup, "Untimed iterations first");
  cmd->add_option("--batch-size", o.batch_size, "Sentences (0: 64 for train, 32 for decoding)");
  cmd->add_option("--seq-len", o.seq_len, "Source/target tokens; tokens generated when decoding");
  cmd->add_option("--vocab", o.vocab, "Source and target vocabulary size");
  cmd->add_option("-b,--beam-size", o.beam_size, "Beam width for --mode beam");
  cmd->add_option(
      "--shard-size", o.shard_size,
      "Decoding: sentences per shard, shards decoded in parallel (0: one batch; default: half "
      "of the sentences, 16 to 64 rows a step)");
  cmd->add_option("--precision", o.precision,
                  "train: fp32 or bf16 (mixed precision); greedy/beam: fp32, bf16 or int8")
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}));
  cmd->add_option("--device", device, "cpu or cuda (the model, batches and optimiser on the GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--seed", o.seed, "Seed of the weights and the random ids");
  cmd->add_flag("--no-ceiling", no_ceiling, "Skip the sgemm ceiling run (MFU reported as 0)");
  cmd->add_flag("--json", json, "End with one JSON line");
  cmd->callback([] {
    // Readable range errors (CLI11's print the largest double in full).
    check_thread_count("--threads", o.threads);
    require_in_range("--repeat", o.repeats, 1, 1000000);
    require_in_range("--warmup", o.warmup, 0, 1000000);
    require_in_range("--batch-size", o.batch_size, 0, 1 << 20);
    require_in_range("--seq-len", o.seq_len, 1, 1 << 20);
    require_in_range("--vocab", o.vocab, 1, 1 << 24);
    require_at_least("--beam-size", o.beam_size, 1);
    require_at_least("--shard-size", o.shard_size, -1);
    o.preset = preset;
    o.device = parse_device(device);
    o.mode = perf::parse_bench_mode(mode);
    o.measure_ceiling = !no_ceiling;
    const perf::ModelBenchResult r = perf::run_model_bench(o);
    const perf::ModelBenchOptions& ro = r.options;
    std::printf(
        "bench %s %s (%s): %lld sentences x %lld tokens%s, %d threads, %lld parameters\n",
        ro.preset.c_str(), perf::to_string(ro.mode), ro.precision.c_str(),
        static_cast<long long>(ro.batch_size), static_cast<long long>(ro.seq_len),
        ro.mode == perf::BenchMode::beam ? (", beam " + std::to_string(ro.beam_size)).c_str() : "",
        r.threads, static_cast<long long>(r.parameters));
    std::printf("  times (s):");
    for (double s : r.seconds) std::printf(" %.4f", s);
    std::printf("\n  median %.4f s  %.1f tokens/s  %.1f GFLOP/s (GEMM)", r.median_seconds,
                r.tokens_per_second, r.gflops);
    if (r.sgemm_gflops > 0)
      std::printf("  sgemm ceiling %.1f GFLOP/s  MFU %.1f %%", r.sgemm_gflops, 100 * r.mfu);
    if (r.bf16_gemm_gflops > 0)
      std::printf("  bf16 ceiling %.1f GFLOP/s  MFU(bf16) %.1f %%", r.bf16_gemm_gflops,
                  100 * r.mfu_bf16);
    std::printf("\n  peak RSS %.1f MiB\n", r.peak_rss_mb);
    if (ro.device != Device::cpu) std::printf("  device: %s\n", r.device_name.c_str());
    if (json) std::printf("%s\n", r.to_json().c_str());
  });
}

}  // namespace tfm::cli
