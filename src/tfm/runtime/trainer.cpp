// tfm::Trainer: a model directory prepared for a run (locked, checked, vocabularies installed,
// data read, the model built or its training state found) and handed to the training loop.
#include "tfm/trainer.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tfm/autograd/grad_mode.h"
#include "tfm/core/check.h"
#include "tfm/core/cpu_isa.h"
#include "tfm/core/dir_lock.h"
#include "tfm/core/file_util.h"
#include "tfm/core/parallel.h"
#include "tfm/data/corpus.h"
#include "tfm/data/vocab.h"
#include "tfm/decode/search.h"
#include "tfm/dist/world.h"
#ifdef TFM_WITH_CUDA
#include "tfm/core/cuda/runtime.h"
#endif
#include "tfm/eval/bleu.h"
#include "tfm/model/checkpoint.h"
#include "tfm/output_path.h"
#include "tfm/runtime/batch_search.h"
#include "tfm/runtime/model_info_impl.h"
#include "tfm/runtime/train_options.h"
#include "tfm/train/train_loop.h"

namespace tfm {

namespace {

namespace fs = std::filesystem;

// A joint run's directory holds vocab.model and a run with one vocabulary a side holds
// vocab.src.model + vocab.trg.model; the other kind's files there would be read instead of (a
// shared vocab.model) or beside this run's, so they are refused (--overwrite removes them).
void check_vocab_kind(const std::string& dir, bool joint, const runtime::OptionSpeller& name) {
  const std::vector<const char*> others =
      joint ? std::vector<const char*>{kSrcVocabFile, kTrgVocabFile}
            : std::vector<const char*>{kSharedVocabFile};
  for (const char* other : others) {
    for (const fs::path& p : {fs::path(dir) / other, fs::path(dir) / legacy_vocab_file(other)}) {
      TFM_CHECK(!fs::exists(p)) << dir << " holds " << p.filename().string() << " from a run with "
                                << (joint ? "one vocabulary a side" : "a joint vocabulary")
                                << ", and this run has " << (joint ? "a joint one" : "one a side")
                                << ": train again with " << name("overwrite")
                                << " to replace that run, or use another directory";
    }
  }
}

// Copies a vocabulary into the model directory under `name`; on resume it must be the same file.
std::string install_vocab(const std::string& from, const std::string& dir, const char* name) {
  const fs::path to = fs::path(dir) / name;
  // A directory trained before the .model names holds the same file under its .spm name.
  const fs::path legacy = fs::path(dir) / legacy_vocab_file(name);
  for (const fs::path& have : {to, legacy}) {
    if (!fs::exists(have)) continue;
    TFM_CHECK(read_file(from) == read_file(have.string()))
        << have.string() << " differs from " << from
        << ": the model directory was trained with another vocabulary";
  }
  if (!fs::exists(to)) copy_file_atomic(from, to.string());
  return to.string();
}

struct ValidSet {
  std::vector<Example> examples;
  std::vector<std::string> refs;  // the target text of each kept example
};

ValidSet read_valid(const TrainOptions& o, const ModelConfig& config, const Vocab& src,
                    const Vocab& trg, TrainLog& log) {
  ValidSet v;
  CorpusReader reader = o.decoder_only ? CorpusReader::monolingual(o.valid_trg)
                                       : CorpusReader::parallel(o.valid_src, o.valid_trg);
  FilterOptions fo;
  fo.sources = !o.decoder_only;
  // Validation keeps long sentences, up to what the model's positions hold (the source framed,
  // the target after BOS): a longer pair is skipped and counted here, at start-up, instead of
  // failing the first validation mid-training.
  fo.max_length =
      std::min({std::max<int64_t>(o.max_length, 1024),
                config.max_length - config.seq_format().source_specials(), config.max_length - 1});
  fo.max_ratio = 0;
  v.examples = read_examples(
      reader, [&](const std::string& x) { return src.encode(x); },
      [&](const std::string& y) { return trg.encode(y); }, fo, &v.refs);
  log.line("valid " + reader.name() + ": " + reader.stats().summary());
  TFM_CHECK(!v.examples.empty()) << "validation set " << reader.name() << " has no usable pairs";
  return v;
}

// Greedy decoding of the validation sources, detokenised, scored against the raw references.
BleuHook make_bleu_hook(std::shared_ptr<const ValidSet> valid, std::shared_ptr<Vocab> trg) {
  return [valid, trg](const Transformer& model) {
    NoGradGuard no_grad;
    decode::SearchOptions so;
    so.max_length = model.config().max_length;
    auto search = decode::make_greedy(so);
    std::vector<Ids> srcs;
    for (const auto& e : valid->examples) srcs.push_back(e.src);
    const auto out = runtime::search_in_batches(model, *search, srcs, {}, {}, BatchLimits{64, 0});
    std::vector<std::string> hyps(out.size());
    for (size_t i = 0; i < out.size(); ++i)
      if (!out[i].empty()) hyps[i] = trg->decode(out[i][0].tokens);
    return eval::corpus_bleu(hyps, {valid->refs}).score;
  };
}

ModelConfig build_config(const TrainOptions& o, const Vocab& src, const Vocab& trg, bool joint) {
  ModelConfig c = o.model_config.empty() ? ModelConfig::preset(o.preset)
                                         : ModelConfig::from_json(read_file(o.model_config));
  if (o.dropout >= 0) c.dropout = o.dropout;
  c.decoder_only = o.decoder_only;
  // A decoder-only model has no source side (0, as tools/convert_pytorch.py writes it).
  c.encoder_layers = o.decoder_only ? 0 : c.encoder_layers;
  c.src_vocab_size = o.decoder_only ? 0 : src.size();
  c.trg_vocab_size = trg.size();
  c.src_vocab_fingerprint = o.decoder_only ? "" : src.fingerprint();
  c.trg_vocab_fingerprint = trg.fingerprint();
  c.share_embeddings = joint && !o.decoder_only;
  for (const Vocab* v : {&src, &trg}) {
    TFM_CHECK(v->pad_id() >= 0 && v->bos_id() >= 0 && v->eos_id() >= 0)
        << v->path() << " lacks a pad, bos or eos piece; train vocabularies with tfm vocab";
  }
  TFM_CHECK(src.pad_id() == trg.pad_id() && src.bos_id() == trg.bos_id() &&
            src.eos_id() == trg.eos_id())
      << "the source and target vocabularies disagree on the pad/bos/eos ids";
  c.pad_id = trg.pad_id(), c.bos_id = trg.bos_id(), c.eos_id = trg.eos_id();
  c.max_length = std::max(c.max_length, o.max_length + 2);
  c.validate();
  return c;
}

// The precision an earlier run of `dir` recorded; empty when unknown.
std::string recorded_precision(const std::string& config_path) {
  try {
    return nlohmann::json::parse(read_file(config_path)).value("precision", "fp32");
  } catch (const std::exception&) {
    return "";  // an unreadable record only loses a note; the state itself is checked later
  }
}

// The loop's options from the run's.
TrainLoopOptions loop_options(const TrainOptions& o, const ModelConfig& config) {
  TrainLoopOptions lo;
  lo.model_dir = o.model_dir;
  lo.update_freq = o.update_freq;
  lo.max_updates = o.max_updates;
  lo.max_epochs = o.max_epochs;
  lo.max_minutes = o.max_minutes;
  lo.schedule.kind = parse_schedule(o.lr_schedule);
  lo.schedule.lr = o.lr;
  lo.schedule.warmup = o.warmup;
  lo.schedule.factor = o.lr_factor;
  lo.schedule.d_model = config.d_model;
  lo.adam.weight_decay = o.weight_decay;
  lo.adam.decoupled = o.optimizer == "adamw";
  lo.label_smoothing = o.label_smoothing;
  lo.clip_norm = o.clip_norm;
  lo.valid_every = o.valid_every;
  lo.save_every = o.save_every;
  lo.log_every = o.log_every;
  lo.keep_last = o.keep_last;
  lo.early_stopping = o.early_stopping;
  lo.metric = parse_valid_metric(o.metric);
  lo.max_nonfinite = o.max_nonfinite;
  lo.valid_batch_tokens = o.valid_batch_tokens;
  lo.dropout_seed = o.seed;
  return lo;
}

}  // namespace

class Trainer::Impl {
 public:
  Impl(TrainOptions options, TrainCallbacks callbacks, const runtime::OptionSpeller& name);
  TrainResult train();
  // Rank 0's part: lock, stale temporaries, overwrite, the fresh-start check, the options record
  // and the log (with the callbacks).
  void prepare_directory(ComputeType asked, const runtime::OptionSpeller& name,
                         TrainCallbacks callbacks);
  // Every rank: rank 0 prepares the directory, the others wait for it; the vocabulary files
  // installed there.
  std::vector<std::string> share_directory(ComputeType asked, const runtime::OptionSpeller& name,
                                           TrainCallbacks callbacks);
  // The training corpus read, filtered and logged, as the batcher's examples.
  Batcher training_batches(const ModelConfig& config, const Vocab& vsrc, const Vocab& vtrg);
  // The model drawn from the seed, moved to the device, its training GEMMs set.
  void build_model(const ModelConfig& config);

  TrainOptions o_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<DirLock> lock_;
  std::unique_ptr<TrainLog> log_;
  std::unique_ptr<Transformer> model_;
  std::unique_ptr<TrainLoop> loop_;
  ModelInfo info_;
  bool resuming_ = false;
  bool ran_ = false;
};

Trainer::Impl::Impl(TrainOptions options, TrainCallbacks callbacks,
                    const runtime::OptionSpeller& name)
    : o_(std::move(options)) {
  runtime::check_train_options(o_, name);
  for (const std::string* path :
       {&o_.train_src, &o_.train_trg, &o_.train_tsv, &o_.valid_src, &o_.valid_trg, &o_.vocab,
        &o_.vocab_src, &o_.vocab_trg, &o_.model_config}) {
    TFM_CHECK(path->empty() || !fs::is_directory(*path)) << *path << " is a directory, not a file";
  }
  check_model_dir(o_.model_dir, /*must_exist=*/false);
  TFM_CHECK_ARG(o_.tensorboard.empty() || !fs::exists(o_.tensorboard) ||
                fs::is_directory(o_.tensorboard))
      << name("tensorboard") << " " << o_.tensorboard << " is a file, not a directory";
  const ComputeType asked = o_.compute_type;
  o_ = runtime::resolve_train_options(std::move(o_));
  dist::World& world = dist::world();
  const std::vector<std::string> vocab_files = share_directory(asked, name, std::move(callbacks));
  resuming_ = has_train_state(o_.model_dir);
  TrainLog& log = *log_;
  const bool joint = !o_.vocab.empty();
  std::shared_ptr<Vocab> vsrc, vtrg;
  if (joint) {
    vsrc = vtrg = std::make_shared<Vocab>(vocab_files[0]);
  } else {
    vsrc = std::make_shared<Vocab>(vocab_files[0]);
    vtrg = std::make_shared<Vocab>(vocab_files[1]);
  }
  if (world.size() > 1)
    log.line("data-parallel: " + std::to_string(world.size()) + " processes, each update " +
             std::to_string(world.size()) + " x " + std::to_string(o_.update_freq) + " batches");

  ModelConfig config = build_config(o_, *vsrc, *vtrg, joint);
  if (resuming_) {
    const ModelConfig saved = read_train_state_config(o_.model_dir);
    if (saved.to_json() != config.to_json()) {
      log.line("note: resuming with the model configuration saved in " + o_.model_dir +
               "/train_state; model options that differ from it are ignored");
    }
    config = saved;
    // The vocabularies were checked against the installed copies; this checks the copies (or a
    // state saved for other ones) against the model.
    check_vocabs(config, ModelTokenizers{vsrc, vtrg}, o_.model_dir);
  }
  Batcher batcher = training_batches(config, *vsrc, *vtrg);
  auto valid = std::make_shared<ValidSet>();
  if (!o_.valid_trg.empty()) *valid = read_valid(o_, config, *vsrc, *vtrg, log);
  TrainLoopOptions lo = loop_options(o_, config);
  lo.files_to_copy = vocab_files;
  lo.world = &world;
  build_model(config);
  BleuHook bleu;
  if (o_.valid_bleu) bleu = make_bleu_hook(valid, vtrg);
  loop_ = std::make_unique<TrainLoop>(lo, *model_, std::move(batcher), valid->examples, log,
                                      std::move(bleu));
  info_ = runtime::make_model_info(o_.model_dir, config, model_->parameter_count());
}

std::vector<std::string> Trainer::Impl::share_directory(ComputeType asked,
                                                        const runtime::OptionSpeller& name,
                                                        TrainCallbacks callbacks) {
  // Rank 0 of a data-parallel run owns the directory: it locks, cleans, records and installs
  // the vocabularies, then the others read what it prepared.
  dist::World& world = dist::world();
  const bool leader = world.rank() == 0;
  const bool joint = !o_.vocab.empty();
  std::vector<std::string> vocab_files;
  std::exception_ptr failure;
  if (leader) {
    try {
      prepare_directory(asked, name, std::move(callbacks));
      if (joint) {
        vocab_files.push_back(install_vocab(o_.vocab, o_.model_dir, kSharedVocabFile));
      } else {
        vocab_files.push_back(install_vocab(o_.vocab_src, o_.model_dir, kSrcVocabFile));
        vocab_files.push_back(install_vocab(o_.vocab_trg, o_.model_dir, kTrgVocabFile));
      }
    } catch (const std::exception&) {
      if (world.size() == 1) throw;
      failure = std::current_exception();
    }
  }
  if (world.size() > 1) {
    const double ok = failure ? 0.0 : 1.0;
    const std::vector<double> all = world.allgather(std::span<const double>(&ok, 1));
    if (failure) std::rethrow_exception(failure);  // rank 0's own error, with its message
    TFM_CHECK(all[0] != 0) << "rank 0 could not prepare " << o_.model_dir
                           << " (its error is in its output)";
    if (!leader) {
      log_ = std::make_unique<TrainLog>("");  // rank 0 alone logs
      for (const char* f : joint ? std::vector<const char*>{kSharedVocabFile}
                                 : std::vector<const char*>{kSrcVocabFile, kTrgVocabFile})
        vocab_files.push_back((fs::path(o_.model_dir) / f).string());
    }
  }
  return vocab_files;
}

Batcher Trainer::Impl::training_batches(const ModelConfig& config, const Vocab& vsrc,
                                        const Vocab& vtrg) {
  const bool tsv = !o_.train_tsv.empty();
  CorpusReader reader = o_.decoder_only ? CorpusReader::monolingual(o_.train_trg)
                        : tsv           ? CorpusReader::tsv(o_.train_tsv)
                                        : CorpusReader::parallel(o_.train_src, o_.train_trg);
  FilterOptions fo;
  fo.max_length = o_.max_length;
  fo.max_ratio = o_.max_ratio;
  fo.sources = !o_.decoder_only;
  std::vector<Example> train = read_examples(
      reader, [&](const std::string& s) { return vsrc.encode(s); },
      [&](const std::string& s) { return vtrg.encode(s); }, fo);
  log_->line("train " + reader.name() + ": " + reader.stats().summary());
  TFM_CHECK(!train.empty()) << "no usable training pairs in " << reader.name() << " ("
                            << reader.stats().summary() << ")";
  BatcherOptions bo;
  bo.batch_tokens = o_.batch_tokens;
  bo.seed = o_.seed;
  bo.format = config.seq_format();
  bo.sources = config.has_encoder();
  return Batcher(std::move(train), bo);
}

void Trainer::Impl::build_model(const ModelConfig& config) {
  TrainLog& log = *log_;
  model_ = std::make_unique<Transformer>(config, o_.seed);
  if (o_.device != Device::cpu) {
    TFM_CHECK(dist::world().size() == 1)
        << "training on " << device_name(o_.device)
        << " runs in one process (data-parallel training is the CPU's)";
#ifdef TFM_WITH_CUDA  // a device is there: validate_train_options checked
    log.line("training on cuda: " + cuda::describe(cuda::device_info()) + " (" +
             compute_type_name(o_.compute_type) + ")");
#endif
    // Drawn on the host from the same seed, then moved: the CPU's initial weights.
    model_->to(o_.device);
  }
  model_->set_train_compute(o_.compute_type);
  if (model_->train_compute() == ComputeType::bfloat16) {
    log.line("training GEMMs in bf16 (mixed precision: f32 parameters, gradients and optimiser)");
    if (o_.device == Device::cpu && !cpu_has_bf16_dot())
      log.line("note: this CPU (" + cpu_isa_summary() +
               ") has no bf16 dot product: bf16 GEMMs run emulated on f32 kernels, with the "
               "results bf16 gives anywhere, but not faster than fp32");
  }
}

void Trainer::Impl::prepare_directory(ComputeType asked, const runtime::OptionSpeller& name,
                                      TrainCallbacks callbacks) {
  // Absent, empty, or a directory of a run: never another program's files (a config.json) or a
  // file the run reads (docs/failure.md, "Output paths").
  check_output_path(o_.model_dir, {.kind = OutputKind::run_directory,
                                   .name = name("model_dir"),
                                   .inputs = {o_.train_src, o_.train_trg, o_.train_tsv,
                                              o_.valid_src, o_.valid_trg, o_.vocab, o_.vocab_src,
                                              o_.vocab_trg, o_.model_config}});
  // Before anything is written (--overwrite removes the other kind's files).
  if (!o_.overwrite) check_vocab_kind(o_.model_dir, !o_.vocab.empty(), name);
  std::error_code ec;
  fs::create_directories(o_.model_dir, ec);
  TFM_CHECK(!ec) << "cannot create model directory " << o_.model_dir << ": " << ec.message();
  // One run a directory, for the whole run: two would interleave their logs and overwrite each
  // other's checkpoints and best/.
  lock_ = std::make_unique<DirLock>(o_.model_dir);
  // Holding the lock, any temporary here is a killed run's leftover.
  const std::vector<std::string> stale = remove_stale_run_temp_files(o_.model_dir);
  if (o_.overwrite) remove_run_output(o_.model_dir);
  // The precision the run so far used, before this run's options replace the record.
  const std::string config_path = (fs::path(o_.model_dir) / "train_config.json").string();
  resuming_ = has_train_state(o_.model_dir);
  const std::string earlier_precision =
      resuming_ && fs::exists(config_path) ? recorded_precision(config_path) : "";
  runtime::check_fresh_start(o_, name);
  // Also proves the directory writable before any work is done.
  write_file_atomic(config_path, runtime::train_options_json(o_));
  log_ = std::make_unique<TrainLog>((fs::path(o_.model_dir) / "train.log").string(),
                                    std::move(callbacks));
  TrainLog& log = *log_;
  if (!o_.tensorboard.empty()) log.write_events_to(o_.tensorboard);
  if (asked == ComputeType::automatic) {
    std::string why = o_.device == Device::cpu ? "CPU level " + cpu_isa_summary()
                                               : std::string("the GPU's tensor cores");
    // bf16 dot products present but not chosen: say why, or the choice looks like a bug.
    if (o_.device == Device::cpu && o_.compute_type == ComputeType::float32 && cpu_has_bf16_dot())
      why += ": bf16 GEMMs run no faster than f32 on an Intel CPU without AMX";
    log.line(std::string("precision auto: ") + compute_type_name(o_.compute_type) + " (" + why +
             ")");
  }
  if (!stale.empty())
    log.line("removed " + std::to_string(stale.size()) +
             " temporary file(s) of an interrupted run");
  if (!earlier_precision.empty() && earlier_precision != compute_type_name(o_.compute_type))
    log.line("note: the run so far trained in " + earlier_precision + ", this one in " +
             compute_type_name(o_.compute_type) +
             ": the continuation is not the one the earlier precision would give");
}

TrainResult Trainer::Impl::train() {
  TFM_CHECK(!ran_) << "Trainer::train runs once per Trainer; make another to continue "
                   << o_.model_dir;
  ran_ = true;
  // The thread count is OpenMP's per-thread setting: the caller's thread is the one that trains.
  const int threads_before = get_threads();
  set_threads(o_.threads);
  struct Restore {
    int n;
    ~Restore() { set_threads(n); }
  } restore{threads_before};
  const TrainLoopResult r = loop_->run(&stop_);
  TrainResult out;
  out.updates = r.updates;
  out.stop_reason = r.stop_reason;
  out.interrupted = r.interrupted;
  out.elapsed_seconds = loop_->progress().elapsed_seconds;
  out.best_update = r.best_update;
  out.best_metric = r.best_metric;
  out.last_valid_perplexity = r.last_valid_ppl > 0 ? r.last_valid_ppl : -1.0;
  out.model_dir = o_.model_dir;
  const fs::path best = fs::path(o_.model_dir) / "best";
  if (r.best_update > 0 && fs::exists(best)) out.best_dir = best.string();
  return out;
}

void validate_train_options(const TrainOptions& options) {
  runtime::check_train_options(options);
}

Trainer::Trainer(TrainOptions options, TrainCallbacks callbacks)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(callbacks), runtime::field_name)) {
}
Trainer::Trainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Trainer runtime::make_trainer(TrainOptions o, TrainCallbacks callbacks, const OptionSpeller& name) {
  return Trainer(std::make_unique<Trainer::Impl>(std::move(o), std::move(callbacks), name));
}
Trainer::~Trainer() = default;
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;

TrainResult Trainer::train() {
  return impl_->train();
}

void Trainer::request_stop() noexcept {
  impl_->stop_.store(true);
}

bool Trainer::resuming() const {
  return impl_->resuming_;
}

const ModelInfo& Trainer::model_info() const {
  return impl_->info_;
}

const TrainOptions& Trainer::options() const {
  return impl_->o_;
}

}  // namespace tfm
