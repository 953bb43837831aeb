// Whole-model benchmarks behind `tfm bench`: training steps and greedy / beam translation of a
// preset-sized model on random token ids, with the GEMM FLOPs each one needs counted
// analytically, so that model FLOPs utilisation (MFU) can be reported against the sgemm ceiling
// measured in the same process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tfm/model/config.h"
#include "tfm/types.h"

namespace tfm::perf {

enum class BenchMode { train, greedy, beam };

BenchMode parse_bench_mode(const std::string& name);  // train | greedy | beam
const char* to_string(BenchMode mode);

struct ModelBenchOptions {
  std::string preset = "small";
  BenchMode mode = BenchMode::train;
  int threads = 0;  // 0: all cores (what set_threads(0) picks)
  int64_t warmup = 1;
  int64_t repeats = 5;
  int64_t vocab = 8000;  // source and target vocabulary
  // Training: batch_size sentences of seq_len source and seq_len target tokens.
  // Decoding: batch_size sentences of seq_len source tokens (+ EOS), exactly seq_len generated.
  int64_t batch_size = 0;  // 0: 64 for train, 32 for decoding
  int64_t seq_len = 32;
  int64_t beam_size = 4;
  // decode::SearchOptions::shard_size (0: one batch over all threads; -1: its automatic rule)
  int64_t shard_size = -1;
  double label_smoothing = 0.1;
  uint64_t seed = 1;
  bool measure_ceiling = true;  // time dnnl_sgemm for the MFU denominator
  // train: the GEMM precision of the step (fp32 | bf16 mixed precision); greedy / beam: the
  // inference precision of the linear layers (fp32 | bf16 | int8).
  std::string precision = "fp32";
  // cuda: the model, the batches and the optimiser on the GPU (training fp32 or bf16 mixed
  // precision, decoding fp32); each timed repeat ends when the device is done, and the ceilings
  // are cuBLASLt's f32 and bf16 GEMMs on that GPU.
  Device device = Device::cpu;
};

struct ModelBenchResult {
  ModelBenchOptions options;    // with the defaults resolved
  int threads = 0;              // threads actually used
  std::vector<double> seconds;  // one per repeat
  double median_seconds = 0;
  int64_t tokens = 0;            // per repeat: source + target (train) or generated (decoding)
  double tokens_per_second = 0;  // tokens / median_seconds
  double gemm_flops = 0;         // useful GEMM FLOPs per repeat (model_gemm_flops)
  double gflops = 0;             // gemm_flops / median_seconds / 1e9
  double sgemm_gflops = 0;       // measured ceiling; 0 when not measured
  double mfu = 0;                // gflops / sgemm_gflops; 0 when not measured
  // precision bf16: a 2048³ bf16 oneDNN matmul's rate, and gflops over it (MFU above stays
  // over the fp32 ceiling, as the issue defines it, so it can pass 100 %).
  double bf16_gemm_gflops = 0;
  double mfu_bf16 = 0;
  double peak_rss_mb = 0;  // process peak resident set, before the ceiling run
  std::string device_name;  // "cpu", or the GPU as cuda::describe gives it
  int64_t parameters = 0;
  std::string to_json() const;  // one line
};

// Builds the preset model (vocab, dropout as the preset says), runs `warmup` untimed and
// `repeats` timed iterations, and fills the result. Throws tfm::Error on bad options.
ModelBenchResult run_model_bench(const ModelBenchOptions& options);

// Matmul FLOPs (2·M·N·K per GEMM, attention's QKᵀ and PV included over every key, causal or
// not) of one forward pass over `batch` pairs of src_len / trg_len tokens; training is 3× this.
double forward_gemm_flops(const ModelConfig& c, int64_t batch, int64_t src_len, int64_t trg_len);
// FLOPs of incremental decoding: encoding `batch` sources of src_len tokens, projecting the
// cross-attention keys/values once, then one decoder step per entry of step_rows (the number of
// rows fed at that step; step i attends over i + 1 target positions).
double decode_gemm_flops(const ModelConfig& c, int64_t batch, int64_t src_len,
                         const std::vector<int64_t>& step_rows);
// The FLOPs a benchmark run of these options counts per repeat (what MFU uses).
double model_gemm_flops(const ModelConfig& c, const ModelBenchOptions& options);

// Best of `runs` timings of an n×n×n dnnl_sgemm on the current thread count, in GFLOP/s.
double sgemm_ceiling_gflops(int64_t n = 2048, int runs = 5);
// The same for a bf16 × bf16 → f32 oneDNN matmul primitive (mixed precision's GEMM).
double bf16_gemm_ceiling_gflops(int64_t n = 2048, int runs = 5);
// On the GPU (a CUDA build with a device): the best rate of an n×n×n cuBLASLt GEMM, f32 (no TF32)
// or bf16 operands with f32 accumulation, in GFLOP/s.
double cuda_gemm_ceiling_gflops(bool bf16, int64_t n = 8192, int runs = 5);
// Peak resident set of this process so far, in MiB (getrusage).
double peak_rss_mb();

}  // namespace tfm::perf
