#include "tfm/perf/model_bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "tfm/autograd/grad_mode.h"
#include "tfm/autograd/tape.h"
#include "tfm/core/allocator.h"
#include "tfm/core/cpu_isa.h"
#include "tfm/core/cuda/runtime.h"
#include "tfm/core/device_copy.h"
#include "tfm/core/parallel.h"
#include "tfm/core/rng.h"
#include "tfm/decode/search.h"
#include "tfm/model/transformer.h"
#include "tfm/ops/cpu/lowp_matmul_cpu.h"
#include "tfm/ops/cpu/primitives.h"
#include "tfm/ops/cross_entropy.h"
#include "tfm/ops/linear.h"
#include "tfm/ops/linear_lowp.h"
#include "tfm/train/optimizer.h"
#ifdef TFM_WITH_CUDA
#include "tfm/core/cuda/device_allocator.h"
#include "tfm/core/cuda/memory.h"
#include "tfm/ops/cuda/elementwise.h"
#include "tfm/ops/cuda/gemm.h"
#endif

namespace tfm::perf {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Uniform ids in [first, vocab): never PAD/BOS/EOS/UNK, so no position is masked.
std::vector<int32_t> random_ids(int64_t n, int64_t vocab, uint64_t seed, uint64_t stream) {
  constexpr int64_t first = 4;
  RandomStream rs(seed, stream);
  std::vector<int32_t> out(n);
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<int32_t>(std::min<int64_t>(
        vocab - 1, first + static_cast<int64_t>(rs.uniform(static_cast<uint64_t>(i)) *
                                                static_cast<double>(vocab - first))));
  return out;
}

ModelConfig bench_config(const ModelBenchOptions& o) {
  ModelConfig c = ModelConfig::preset(o.preset);
  c.src_vocab_size = c.trg_vocab_size = o.vocab;
  return c;
}

// Rows fed at each decoder step of a benchmark search: every sentence at step 0, then beam rows
// each (EOS is forbidden before seq_len tokens, so no hypothesis finishes early), and the final
// step that may only emit EOS.
std::vector<int64_t> decode_step_rows(const ModelBenchOptions& o) {
  const int64_t beam = o.mode == BenchMode::beam ? o.beam_size : 1;
  std::vector<int64_t> rows(o.seq_len + 1, o.batch_size * beam);
  rows[0] = o.batch_size;
  return rows;
}

ModelBenchOptions resolved(const ModelBenchOptions& in) {
  ModelBenchOptions o = in;
  if (o.batch_size == 0) o.batch_size = o.mode == BenchMode::train ? 64 : 32;
  TFM_CHECK(o.batch_size > 0) << "bench: batch size must be positive, got " << o.batch_size;
  TFM_CHECK(o.seq_len > 0) << "bench: sequence length must be positive, got " << o.seq_len;
  TFM_CHECK(o.repeats > 0) << "bench: repeats must be positive, got " << o.repeats;
  TFM_CHECK(o.warmup >= 0) << "bench: warm-up iterations must be >= 0, got " << o.warmup;
  TFM_CHECK(o.vocab > 4) << "bench: vocabulary must exceed the 4 special ids, got " << o.vocab;
  TFM_CHECK(o.beam_size >= 1) << "bench: beam size must be >= 1, got " << o.beam_size;
  TFM_CHECK(o.shard_size >= -1) << "bench: shard size must be >= 0 (-1: automatic), got "
                                << o.shard_size;
  TFM_CHECK(o.threads >= 0) << "bench: threads must be >= 0, got " << o.threads;
  if (o.device != Device::cpu && o.mode != BenchMode::train) o.shard_size = 0;
  return o;
}

// One timed unit of work; returns tokens processed.
class Workload {
 public:
  virtual ~Workload() = default;
  virtual int64_t run() = 0;
};

class TrainWorkload : public Workload {
 public:
  TrainWorkload(Transformer& model, const ModelBenchOptions& o) : model_(model), o_(o) {
    const int64_t b = o.batch_size, l = o.seq_len;
    src_ = Tensor::from_vector<int32_t>({b, l}, random_ids(b * l, o.vocab, o.seed, 1));
    // trg_in = BOS y1 … y(l-1), trg_out = y1 … yl: a shifted target as training feeds it.
    std::vector<int32_t> y = random_ids(b * (l + 1), o.vocab, o.seed, 2), in(b * l), out(b * l);
    for (int64_t i = 0; i < b; ++i) {
      in[i * l] = static_cast<int32_t>(model.config().bos_id);
      for (int64_t t = 0; t < l; ++t) {
        if (t > 0) in[i * l + t] = y[i * (l + 1) + t];
        out[i * l + t] = y[i * (l + 1) + t + 1];
      }
    }
    trg_in_ = Tensor::from_vector<int32_t>({b, l}, in);
    // The model moves the ids it is given; the loss's targets go to its device here, once.
    trg_out_ = to_device(Tensor::from_vector<int32_t>({b, l}, out), model.device());
    std::vector<std::pair<std::string, Tensor>> params;
    for (const auto& [name, p] : model.named_parameters()) params.emplace_back(name, *p);
    adam_ = std::make_unique<Adam>(params, AdamOptions{});
    // As the Trainer: bf16 training multiplies the optimiser's bf16 weight copies.
    if (model.train_compute() == ComputeType::bfloat16) adam_->keep_bf16_copies();
    model_.set_training(true);
  }

  int64_t run() override {
    Tensor logits = model_.forward(src_, trg_in_);  // (B, T, V)
    CrossEntropyResult ce =
        softmax_cross_entropy(logits, trg_out_, o_.label_smoothing, model_.config().pad_id);
    autograd::backward(ce.loss);
    adam_->step(1e-4);
    adam_->zero_grad();
    return 2 * o_.batch_size * o_.seq_len;
  }

 private:
  Transformer& model_;
  const ModelBenchOptions& o_;
  Tensor src_, trg_in_, trg_out_;
  std::unique_ptr<Adam> adam_;
};

class DecodeWorkload : public Workload {
 public:
  DecodeWorkload(Transformer& model, const ModelBenchOptions& o) : model_(model), o_(o) {
    std::vector<int32_t> ids = random_ids(o.batch_size * o.seq_len, o.vocab, o.seed, 3);
    for (int64_t i = 0; i < o.batch_size; ++i)
      sources_.emplace_back(ids.begin() + i * o.seq_len, ids.begin() + (i + 1) * o.seq_len);
    decode::SearchOptions so;
    so.beam_size = o.mode == BenchMode::beam ? o.beam_size : 1;
    so.min_length = o.seq_len;  // EOS forbidden before seq_len tokens …
    so.max_length_a = 0.0;      // … and forced right after: exactly seq_len tokens + EOS
    so.max_length_b = static_cast<double>(o.seq_len + 1);
    so.shard_size = o.device == Device::cpu ? o.shard_size : 0;  // one search on a device
    search_ = decode::make_search(so);
    model_.set_training(false);
  }

  int64_t run() override {
    std::vector<decode::NBest> out = search_->run(model_, sources_);
    int64_t tokens = 0;
    for (const decode::NBest& n : out) {
      TFM_CHECK(!n.empty() && static_cast<int64_t>(n[0].tokens.size()) == o_.seq_len)
          << "bench: a search returned " << (n.empty() ? 0 : n[0].tokens.size())
          << " tokens instead of " << o_.seq_len;
      tokens += static_cast<int64_t>(n[0].tokens.size());
    }
    return tokens;
  }

 private:
  Transformer& model_;
  const ModelBenchOptions& o_;
  std::vector<Ids> sources_;
  std::unique_ptr<decode::Search> search_;
};

}  // namespace

BenchMode parse_bench_mode(const std::string& name) {
  if (name == "train") return BenchMode::train;
  if (name == "greedy") return BenchMode::greedy;
  if (name == "beam") return BenchMode::beam;
  TFM_FAIL() << "bench: unknown mode \"" << name << "\" (train, greedy, beam)";
  return BenchMode::train;  // not reached: TFM_FAIL throws
}

const char* to_string(BenchMode mode) {
  switch (mode) {
    case BenchMode::train:
      return "train";
    case BenchMode::greedy:
      return "greedy";
    case BenchMode::beam:
      return "beam";
  }
  return "?";
}

double forward_gemm_flops(const ModelConfig& c, int64_t batch, int64_t src_len, int64_t trg_len) {
  const double d = static_cast<double>(c.d_model), ff = static_cast<double>(c.d_ff);
  const double ns = static_cast<double>(batch * src_len), nt = static_cast<double>(batch * trg_len);
  const double s = static_cast<double>(src_len), t = static_cast<double>(trg_len);
  double f = 0;
  if (c.has_encoder()) {
    // q, k, v, out projections and the FFN per token; QKᵀ and PV over every key.
    f += static_cast<double>(c.encoder_layers) *
         (2 * ns * (4 * d * d + 2 * d * ff) + 4 * ns * s * d);
  }
  double dec = 2 * nt * (4 * d * d + 2 * d * ff) + 4 * nt * t * d;  // self-attention and FFN
  if (c.has_encoder())
    dec += 2 * nt * 2 * d * d + 2 * ns * 2 * d * d + 4 * nt * s * d;  // cross: q, out; k, v
  f += static_cast<double>(c.decoder_layers) * dec;
  f += 2 * nt * d * static_cast<double>(c.trg_vocab_size);  // output projection
  return f;
}

double decode_gemm_flops(const ModelConfig& c, int64_t batch, int64_t src_len,
                         const std::vector<int64_t>& step_rows) {
  const double d = static_cast<double>(c.d_model), ff = static_cast<double>(c.d_ff);
  const double ns = static_cast<double>(batch * src_len), s = static_cast<double>(src_len);
  const double layers = static_cast<double>(c.decoder_layers);
  double f = 0;
  if (c.has_encoder()) {
    f += static_cast<double>(c.encoder_layers) *
         (2 * ns * (4 * d * d + 2 * d * ff) + 4 * ns * s * d);
    f += layers * 2 * ns * 2 * d * d;  // cross-attention keys and values, once
  }
  for (size_t i = 0; i < step_rows.size(); ++i) {
    const double r = static_cast<double>(step_rows[i]), keys = static_cast<double>(i + 1);
    double layer = 2 * r * (4 * d * d + 2 * d * ff) + 4 * r * keys * d;
    if (c.has_encoder()) layer += 2 * r * 2 * d * d + 4 * r * s * d;
    f += layers * layer + 2 * r * d * static_cast<double>(c.trg_vocab_size);
  }
  return f;
}

double model_gemm_flops(const ModelConfig& c, const ModelBenchOptions& in) {
  const ModelBenchOptions o = resolved(in);
  if (o.mode == BenchMode::train)
    return 3 * forward_gemm_flops(c, o.batch_size, o.seq_len, o.seq_len);
  // The encoder reads each source + EOS.
  return decode_gemm_flops(c, o.batch_size, o.seq_len + 1, decode_step_rows(o));
}

namespace {

// Best GFLOP/s of `runs` timed calls of gemm(a, b, c) on n×n operands (one untimed call first:
// warm caches, a primitive built).
template <typename Gemm>
double best_square_gemm_rate(int64_t n, int runs, Gemm gemm) {
  std::vector<float> a(n * n), b(n * n), c(n * n, 0.f);
  for (int64_t i = 0; i < n * n; ++i) {
    a[i] = static_cast<float>((i * 7) % 13) * 0.01f;
    b[i] = static_cast<float>((i * 5) % 11) * 0.01f;
  }
  double best = 0;
  for (int r = 0; r <= runs; ++r) {
    const Clock::time_point t0 = Clock::now();
    gemm(a.data(), b.data(), c.data());
    const double sec = seconds_since(t0);
    if (r > 0) best = std::max(best, 2.0 * static_cast<double>(n * n * n) / sec / 1e9);
  }
  return best;
}

}  // namespace

double sgemm_ceiling_gflops(int64_t n, int runs) {
  TFM_CHECK(n > 0 && runs > 0) << "sgemm_ceiling_gflops: n and runs must be positive";
  return best_square_gemm_rate(n, runs, [n](const float* a, const float* b, float* c) {
    cpu::gemm<float>(false, false, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
  });
}

double bf16_gemm_ceiling_gflops(int64_t n, int runs) {
  TFM_CHECK(n > 0 && runs > 0) << "bf16_gemm_ceiling_gflops: n and runs must be positive";
  std::vector<uint16_t> ab(n * n), bb(n * n);
  bool converted = false;
  // The operands are converted once, in the untimed first call: the ceiling of the GEMM alone.
  return best_square_gemm_rate(n, runs, [&](const float* a, const float* b, float* c) {
    if (!converted) {
      cpu::float_to_bf16(n * n, a, ab.data());
      cpu::float_to_bf16(n * n, b, bb.data());
      converted = true;
    }
    cpu::matmul_primitive_bf16(false, false, n, n, n, ab.data(), bb.data(), nullptr,
                               Activation::none, c);
  });
}

double cuda_gemm_ceiling_gflops(bool bf16, int64_t n, int runs) {
  TFM_CHECK(n > 0 && runs > 0) << "cuda_gemm_ceiling_gflops: n and runs must be positive";
#ifdef TFM_WITH_CUDA
  cuda::require_device("the GPU GEMM ceiling");
  // Operands drawn on the host (zeros would flatter the tensor cores' power draw) in plain
  // device buffers, f32 or their bf16 roundings; A·Aᵀ.
  const auto count = static_cast<size_t>(n * n);
  std::vector<float> host(count);
  RandomStream rs(1, 9);
  for (size_t i = 0; i < count; ++i)
    host[i] = static_cast<float>(rs.uniform(static_cast<uint64_t>(i))) - 0.5f;
  std::shared_ptr<void> a32 = cuda::device_allocator().allocate(count * sizeof(float));
  std::shared_ptr<void> c = cuda::device_allocator().allocate(count * sizeof(float));
  std::shared_ptr<void> a16 = bf16 ? cuda::device_allocator().allocate(count * 2) : nullptr;
  cuda::copy_host_to_device(a32.get(), host.data(), count * sizeof(float));
  const auto* a = static_cast<const float*>(a32.get());
  auto* out = static_cast<float*>(c.get());
  if (bf16) cuda::float_to_bf16(n * n, a, static_cast<uint16_t*>(a16.get()));
  double best = 0;
  for (int r = 0; r <= runs; ++r) {  // the first call picks the algorithm: untimed
    cuda::synchronize();
    const Clock::time_point t0 = Clock::now();
    if (bf16) {
      const auto* p = static_cast<const uint16_t*>(a16.get());
      cuda::gemm_bf16(false, true, n, n, n, 1.f, p, n, p, n, 0.f, out, n);
    } else {
      cuda::gemm(false, true, n, n, n, 1.f, a, n, a, n, 0.f, out, n);
    }
    cuda::synchronize();
    const double sec = seconds_since(t0);
    if (r > 0) best = std::max(best, 2.0 * static_cast<double>(n) * n * n / sec / 1e9);
  }
  return best;
#else
  (void)bf16;
  TFM_FAIL() << "the GPU GEMM ceiling needs a build with the CUDA backend";
  return 0;
#endif
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux reports KiB
}

ModelBenchResult run_model_bench(const ModelBenchOptions& in) {
  ModelBenchResult res;
  res.options = resolved(in);
  const ModelBenchOptions& o = res.options;
  set_threads(o.threads);
  res.threads = get_threads();
  const ModelConfig c = bench_config(o);
  Transformer model(c, o.seed);
  res.parameters = model.parameter_count();
  const bool training = o.mode == BenchMode::train;
  const ComputeType compute =
      resolve_compute_type(parse_compute_type(o.precision), o.device, training);
  res.device_name = "cpu";
  if (o.device != Device::cpu) {
#ifdef TFM_WITH_CUDA
    cuda::require_device("tfm bench --device cuda");
    res.device_name = cuda::describe(cuda::device_info());
#endif
    model.to(o.device);  // errors clearly without a device or a CUDA build
  }
  if (training)
    model.set_train_compute(compute);
  else
    model.bind_inference(compute);  // on a device: prepared there (fp32: the f32 weights)
  std::unique_ptr<Workload> work;
  if (training)
    work = std::make_unique<TrainWorkload>(model, o);
  else
    work = std::make_unique<DecodeWorkload>(model, o);
  // A device queues work: a repeat ends when the device has done it.
  const auto finish = [&] {
#ifdef TFM_WITH_CUDA
    if (o.device == Device::cuda) cuda::synchronize();
#endif
  };
  for (int64_t i = 0; i < o.warmup; ++i) work->run();
  finish();
  for (int64_t i = 0; i < o.repeats; ++i) {
    const Clock::time_point t0 = Clock::now();
    res.tokens = work->run();
    finish();
    res.seconds.push_back(seconds_since(t0));
  }
  res.median_seconds = median(res.seconds);
  res.tokens_per_second = static_cast<double>(res.tokens) / res.median_seconds;
  res.gemm_flops = model_gemm_flops(c, o);
  res.gflops = res.gemm_flops / res.median_seconds / 1e9;
  res.peak_rss_mb = peak_rss_mb();
  const bool gpu = o.device != Device::cpu;
  if (o.measure_ceiling) {
    res.sgemm_gflops = gpu ? cuda_gemm_ceiling_gflops(false) : sgemm_ceiling_gflops();
    res.mfu = res.gflops / res.sgemm_gflops;
    if (compute == ComputeType::bfloat16) {
      res.bf16_gemm_gflops = gpu ? cuda_gemm_ceiling_gflops(true) : bf16_gemm_ceiling_gflops();
      res.mfu_bf16 = res.gflops / res.bf16_gemm_gflops;
    }
  }
  return res;
}

std::string ModelBenchResult::to_json() const {
  nlohmann::json j;
  j["mode"] = to_string(options.mode);
  j["preset"] = options.preset;
  j["device"] = device_name;
  j["cpu_isa"] = cpu_isa_name(cpu_isa());
  j["threads"] = threads;
  j["tokens_per_second"] = tokens_per_second;
  j["peak_rss_mb"] = peak_rss_mb;
  j["mfu"] = mfu;
  j["gflops"] = gflops;
  j["sgemm_gflops"] = sgemm_gflops;
  j["precision"] = options.precision;
  if (bf16_gemm_gflops > 0) {
    j["bf16_gemm_gflops"] = bf16_gemm_gflops;
    j["mfu_bf16"] = mfu_bf16;
  }
  j["gemm_flops_per_repeat"] = gemm_flops;
  j["tokens_per_repeat"] = tokens;
  j["times_s"] = seconds;
  j["median_s"] = median_seconds;
  j["repeats"] = options.repeats;
  j["warmup"] = options.warmup;
  j["batch_size"] = options.batch_size;
  j["seq_len"] = options.seq_len;
  j["vocab"] = options.vocab;
  j["parameters"] = parameters;
  if (options.mode == BenchMode::beam) j["beam_size"] = options.beam_size;
  if (options.mode != BenchMode::train) {  // the sentences a shard, resolved (0: one batch)
    decode::SearchOptions so;
    so.beam_size = options.mode == BenchMode::beam ? options.beam_size : 1;
    so.shard_size = options.shard_size;
    j["shard_size"] = decode::shard_sentences(so, options.batch_size);
  }
  // Decisive on a shared machine (docs/history/performance.md), so recorded with every result.
  const char* wait = std::getenv("OMP_WAIT_POLICY");
  j["omp_wait_policy"] = wait ? wait : "";
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) j["load_average_1m"] = load[0];
  return j.dump();
}

}  // namespace tfm::perf
