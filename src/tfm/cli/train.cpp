// tfm train: a parallel corpus (+ SentencePiece vocabularies) -> a model directory. Reads the
// data, builds (or, when DIR/train_state exists, resumes) the model and hands it to Trainer; a
// first SIGINT/SIGTERM saves a checkpoint and stops cleanly, a second one kills.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tfm/autograd/grad_mode.h"
#include "tfm/cli/commands.h"
#include "tfm/core/cpu_isa.h"
#include "tfm/core/dir_lock.h"
#include "tfm/core/file_util.h"
#include "tfm/core/parallel.h"
#include "tfm/core/validate.h"
#include "tfm/data/corpus.h"
#include "tfm/data/vocab.h"
#include "tfm/decode/search.h"
#include "tfm/eval/bleu.h"
#include "tfm/runtime/batch_search.h"
#include "tfm/model/checkpoint.h"
#include "tfm/train/config_file.h"
#include "tfm/train/trainer.h"

namespace tfm::cli {

namespace {

namespace fs = std::filesystem;

struct Flags {
  std::string dir, train_src, train_trg, train_tsv, valid_src, valid_trg;
  std::string vocab, vocab_src, vocab_trg, preset = "small", config, model_config;
  int64_t batch_tokens = 4096, update_freq = 1, max_updates = 0, max_epochs = 0;
  double max_minutes = 0;
  double lr = 5e-4, lr_factor = 1.0, label_smoothing = 0.1, clip_norm = 0.0, weight_decay = 0.0;
  double dropout = -1, max_ratio = 3.0;
  std::string schedule = "inverse_sqrt", optimizer = "adam", metric, device = "cpu";
  std::string precision = "fp32";
  int64_t warmup = 4000, max_length = 256, save_every = 1000, valid_every = 1000;
  int64_t keep_last = 3, early_stopping = 0, log_every = 100, max_nonfinite = 10;
  int64_t valid_batch_tokens = 8192;
  uint64_t seed = 1;
  int threads = 0;
  bool valid_bleu = false;
  bool overwrite = false;
};

// Every number a user gave, from flags or --config, before any work: finite and in range.
void validate_flags(const Flags& f) {
  check_thread_count("--threads", f.threads);
  require_in_range("--batch-tokens", f.batch_tokens, 1, int64_t{1} << 30);
  require_in_range("--update-freq", f.update_freq, 1, 1 << 20);
  require_at_least("--max-updates", f.max_updates, 0);
  require_at_least("--max-epochs", f.max_epochs, 0);
  require_in_range("--max-minutes", f.max_minutes, 0.0, 1e9);
  require_in_range("--lr", f.lr, 0.0, 10.0, /*lo_open=*/true);
  require_in_range("--lr-factor", f.lr_factor, 0.0, 1e6, /*lo_open=*/true);
  require_in_range("--label-smoothing", f.label_smoothing, 0.0, 1.0, false, /*hi_open=*/true);
  require_in_range("--clip-norm", f.clip_norm, 0.0, 1e9);
  require_in_range("--weight-decay", f.weight_decay, 0.0, 1.0);
  // -1 (the default) means the preset's.
  if (f.dropout != -1) require_in_range("--dropout", f.dropout, 0.0, 1.0, false, true);
  require_in_range("--max-ratio", f.max_ratio, 0.0, 1e6);
  require_in_range("--warmup", f.warmup, 0, int64_t{1} << 40);
  require_in_range("--max-length", f.max_length, 1, 1 << 20);
  require_at_least("--save-every", f.save_every, 0);
  require_at_least("--valid-every", f.valid_every, 0);
  require_in_range("--valid-batch-tokens", f.valid_batch_tokens, 1, int64_t{1} << 30);
  require_at_least("--keep-last", f.keep_last, 0);
  require_at_least("--early-stopping", f.early_stopping, 0);
  require_at_least("--log-every", f.log_every, 1);
  require_at_least("--max-nonfinite", f.max_nonfinite, 1);
}

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) {
  g_stop.store(true);
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // a second signal takes the default action: an impatient user wins
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// Options from --config the command line did not give.
void apply_config_file(CLI::App* cmd, const std::string& path) {
  for (const auto& [key, values] : read_config_file(path)) {
    CLI::Option* opt = nullptr;
    try {
      opt = cmd->get_option("--" + key);
    } catch (const CLI::OptionNotFound&) {
      TFM_FAIL() << path << ": unknown option \"" << key << "\" (see tfm train --help)";
    }
    TFM_CHECK(key != "config") << path << ": a config file cannot name another config file";
    if (opt->count() > 0) continue;  // the command line wins
    try {
      for (const auto& v : values) opt->add_result(v);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      TFM_FAIL() << path << ": option \"" << key << "\": " << e.what();
    }
  }
}

// Every option's effective value, for DIR/train_config.json.
nlohmann::json effective_config(CLI::App* cmd) {
  nlohmann::json j = nlohmann::json::object();
  for (const CLI::Option* opt : cmd->get_options()) {
    const std::string name = opt->get_single_name();
    if (name.empty() || name == "help") continue;
    if (opt->count() > 0) {
      const auto& r = opt->results();
      j[name] = r.size() == 1 ? nlohmann::json(r[0]) : nlohmann::json(r);
    } else {
      j[name] = opt->get_default_str();
    }
  }
  return j;
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

ValidSet read_valid(const Flags& f, const ModelConfig& config, const Vocab& src, const Vocab& trg,
                    TrainLog& log) {
  ValidSet v;
  CorpusReader reader = CorpusReader::parallel(f.valid_src, f.valid_trg);
  FilterOptions fo;
  // Validation keeps long sentences, up to what the model's positions hold (the source framed,
  // the target after BOS): a longer pair is skipped and counted here, at start-up, instead of
  // failing the first validation mid-training.
  fo.max_length =
      std::min({std::max<int64_t>(f.max_length, 1024),
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
    const auto out = runtime::search_in_batches(model, *search, srcs, {}, BatchLimits{64, 0});
    std::vector<std::string> hyps(out.size());
    for (size_t i = 0; i < out.size(); ++i)
      if (!out[i].empty()) hyps[i] = trg->decode(out[i][0].tokens);
    return eval::corpus_bleu(hyps, {valid->refs}).score;
  };
}

ModelConfig build_config(const Flags& f, const Vocab& src, const Vocab& trg, bool joint) {
  ModelConfig c = f.model_config.empty() ? ModelConfig::preset(f.preset)
                                         : ModelConfig::from_json(read_file(f.model_config));
  if (f.dropout >= 0) c.dropout = f.dropout;
  c.decoder_only = false;
  c.src_vocab_size = src.size();
  c.trg_vocab_size = trg.size();
  c.share_embeddings = joint;
  for (const Vocab* v : {&src, &trg}) {
    TFM_CHECK(v->pad_id() >= 0 && v->bos_id() >= 0 && v->eos_id() >= 0)
        << v->path() << " lacks a pad, bos or eos piece; train vocabularies with tfm vocab";
  }
  TFM_CHECK(src.pad_id() == trg.pad_id() && src.bos_id() == trg.bos_id() &&
            src.eos_id() == trg.eos_id())
      << "the source and target vocabularies disagree on the pad/bos/eos ids";
  c.pad_id = trg.pad_id(), c.bos_id = trg.bos_id(), c.eos_id = trg.eos_id();
  c.max_length = std::max(c.max_length, f.max_length + 2);
  c.validate();
  return c;
}

void run_train(CLI::App* cmd, Flags& f) {
  if (!f.config.empty()) apply_config_file(cmd, f.config);
  validate_flags(f);
  TFM_CHECK(f.device == "cpu") << "--device " << f.device
                               << ": this build trains on the CPU only (no CUDA backend yet)";
  set_threads(f.threads);
  for (const std::string* path : {&f.train_src, &f.train_trg, &f.train_tsv, &f.valid_src,
                                  &f.valid_trg, &f.vocab, &f.vocab_src, &f.vocab_trg}) {
    TFM_CHECK(path->empty() || !fs::is_directory(*path)) << *path << " is a directory, not a file";
  }
  const bool tsv = !f.train_tsv.empty();
  TFM_CHECK(tsv != (!f.train_src.empty() || !f.train_trg.empty()))
      << "give either --train-src and --train-trg, or --train-tsv";
  TFM_CHECK(tsv || (!f.train_src.empty() && !f.train_trg.empty()))
      << "--train-src and --train-trg go together";
  TFM_CHECK(f.valid_src.empty() == f.valid_trg.empty())
      << "--valid-src and --valid-trg go together";
  const bool joint = !f.vocab.empty();
  TFM_CHECK(joint != (!f.vocab_src.empty() || !f.vocab_trg.empty()))
      << "give either --vocab (joint) or --vocab-src and --vocab-trg";
  TFM_CHECK(joint || (!f.vocab_src.empty() && !f.vocab_trg.empty()))
      << "--vocab-src and --vocab-trg go together";

  std::error_code ec;
  fs::create_directories(f.dir, ec);
  TFM_CHECK(!ec) << "cannot create model directory " << f.dir << ": " << ec.message();
  // One run a directory, for the whole run: two would interleave their logs and overwrite each
  // other's checkpoints and best/.
  const DirLock lock(f.dir);
  // Holding the lock, any temporary here is a killed run's leftover.
  const std::vector<std::string> stale = remove_stale_run_temp_files(f.dir);
  if (f.overwrite) remove_run_output(f.dir);
  // The precision the run so far used, before this run's options replace the record.
  const std::string config_path = (fs::path(f.dir) / "train_config.json").string();
  std::string earlier_precision;
  if (has_train_state(f.dir) && fs::exists(config_path)) {
    try {
      earlier_precision = nlohmann::json::parse(read_file(config_path)).value("precision", "fp32");
    } catch (const std::exception&) {
      // An unreadable record only loses this note; the training state itself is checked later.
    }
  }
  // auto: bf16 where the CPU multiplies bf16 (AVX512-BF16), where it pays; fp32 elsewhere. The
  // record keeps what ran, so a resume on another machine notes a change.
  const std::string asked_precision = f.precision;
  if (f.precision == "auto") f.precision = cpu_has_bf16_dot() ? "bf16" : "fp32";
  nlohmann::json record = effective_config(cmd);
  record["precision"] = f.precision;
  if (!has_train_state(f.dir)) {
    // A model or checkpoints without a state to resume: starting from scratch would overwrite
    // them, and mix checkpoints/ of two runs. One case is no other run's: best/ alone, from a
    // validation before the first checkpoint of a run killed then; the same command (the same
    // recorded options) may start that run again.
    const std::string existing = existing_run_output(f.dir);
    bool same_run = false;
    if (existing == (fs::path(f.dir) / "best").string() && fs::exists(config_path)) {
      try {
        same_run = nlohmann::json::parse(read_file(config_path)) == record;
      } catch (const std::exception&) {
      }
    }
    TFM_CHECK(existing.empty() || same_run)
        << f.dir << " holds a model or checkpoints (" << existing
        << ") but no training state to resume (train_state/state.safetensors): starting from "
           "scratch would overwrite them. Run again with --overwrite to replace them, or use "
           "another --model directory";
  }
  // Also proves the directory writable before any work is done.
  write_file_atomic(config_path, record.dump(2) + "\n");
  TrainLog log((fs::path(f.dir) / "train.log").string(), isatty(STDERR_FILENO) == 1);
  if (asked_precision == "auto")
    log.line("precision auto: " + f.precision + " (CPU level " + cpu_isa_summary() + ")");
  if (!stale.empty())
    log.line("removed " + std::to_string(stale.size()) +
             " temporary file(s) of an interrupted run");
  if (!earlier_precision.empty() && earlier_precision != f.precision)
    log.line("note: the run so far trained with --precision " + earlier_precision +
             ", this one with " + f.precision +
             ": the continuation is not the one the earlier precision would give");

  std::vector<std::string> vocab_files;
  std::shared_ptr<Vocab> vsrc, vtrg;
  if (joint) {
    vocab_files.push_back(install_vocab(f.vocab, f.dir, kSharedVocabFile));
    vsrc = vtrg = std::make_shared<Vocab>(vocab_files[0]);
  } else {
    vocab_files.push_back(install_vocab(f.vocab_src, f.dir, kSrcVocabFile));
    vocab_files.push_back(install_vocab(f.vocab_trg, f.dir, kTrgVocabFile));
    vsrc = std::make_shared<Vocab>(vocab_files[0]);
    vtrg = std::make_shared<Vocab>(vocab_files[1]);
  }

  const bool resuming = has_train_state(f.dir);
  ModelConfig config = build_config(f, *vsrc, *vtrg, joint);
  if (resuming) {
    const ModelConfig saved = read_train_state_config(f.dir);
    if (saved.to_json() != config.to_json()) {
      log.line("note: resuming with the model configuration saved in " + f.dir +
               "/train_state; model flags that differ from it are ignored");
    }
    config = saved;
    // The vocabularies were checked against the installed copies; this checks the copies (or a
    // state saved for other ones) against the model.
    check_vocabs(config, ModelVocabs{vsrc, vtrg}, f.dir);
  }

  CorpusReader reader =
      tsv ? CorpusReader::tsv(f.train_tsv) : CorpusReader::parallel(f.train_src, f.train_trg);
  FilterOptions fo;
  fo.max_length = f.max_length;
  fo.max_ratio = f.max_ratio;
  std::vector<Example> train = read_examples(
      reader, [&](const std::string& s) { return vsrc->encode(s); },
      [&](const std::string& s) { return vtrg->encode(s); }, fo);
  log.line("train " + reader.name() + ": " + reader.stats().summary());
  TFM_CHECK(!train.empty()) << "no usable training pairs in " << reader.name() << " ("
                            << reader.stats().summary() << ")";

  auto valid = std::make_shared<ValidSet>();
  if (!f.valid_src.empty()) *valid = read_valid(f, config, *vsrc, *vtrg, log);

  BatcherOptions bo;
  bo.batch_tokens = f.batch_tokens;
  bo.seed = f.seed;
  bo.format = config.seq_format();
  Batcher batcher(std::move(train), bo);

  TrainerOptions o;
  o.model_dir = f.dir;
  o.update_freq = f.update_freq;
  o.max_updates = f.max_updates;
  o.max_epochs = f.max_epochs;
  o.max_minutes = f.max_minutes;
  o.schedule.kind = parse_schedule(f.schedule);
  o.schedule.lr = f.lr;
  o.schedule.warmup = f.warmup;
  o.schedule.factor = f.lr_factor;
  o.schedule.d_model = config.d_model;
  o.adam.weight_decay = f.weight_decay;
  o.adam.decoupled = f.optimizer == "adamw";
  o.label_smoothing = f.label_smoothing;
  o.clip_norm = f.clip_norm;
  o.valid_every = f.valid_every;
  o.save_every = f.save_every;
  o.log_every = f.log_every;
  o.keep_last = f.keep_last;
  o.early_stopping = f.early_stopping;
  o.metric = parse_valid_metric(f.metric.empty() ? (f.valid_bleu ? "bleu" : "ppl") : f.metric);
  o.max_nonfinite = f.max_nonfinite;
  o.valid_batch_tokens = f.valid_batch_tokens;
  o.dropout_seed = f.seed;
  o.files_to_copy = vocab_files;

  Transformer model(config, f.seed);
  model.set_train_compute(
      resolve_compute_type(parse_compute_type(f.precision), Device::cpu, /*training=*/true));
  if (model.train_compute() == ComputeType::bfloat16) {
    log.line("training GEMMs in bf16 (mixed precision: f32 parameters, gradients and optimiser)");
    if (!cpu_has_bf16_dot())
      log.line("note: this CPU (" + cpu_isa_summary() +
               ") has no bf16 dot product: bf16 GEMMs run emulated on f32 kernels, with the "
               "results bf16 gives anywhere, but not faster than fp32");
  }
  BleuHook bleu;
  if (f.valid_bleu) {
    TFM_CHECK(!valid->examples.empty()) << "--valid-bleu needs --valid-src and --valid-trg";
    bleu = make_bleu_hook(valid, vtrg);
  }
  Trainer trainer(o, model, std::move(batcher), valid->examples, log, bleu);
  install_stop_handlers();
  const TrainResult r = trainer.run(&g_stop);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (r.interrupted) {
    log.line(std::string("interrupted: checkpoint saved; run the same command again") +
             (f.overwrite ? " without --overwrite" : "") + " to continue");
  }
  std::cout << "model: " << f.dir << " (last)";
  if (r.best_update > 0) std::cout << ", " << f.dir << "/best (best validation)";
  std::cout << "\n";
}

}  // namespace

void add_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a model on a parallel corpus (resumes DIR)");
  // Repeating a flag (e.g. a script appending an override) means its last value, as in most tools.
  cmd->option_defaults()->always_capture_default()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  static Flags f;
  cmd->add_option("--model", f.dir, "Model directory (resumed when DIR/train_state exists)")
      ->required();
  cmd->add_option("--train-src", f.train_src, "Training source text, one sentence a line");
  cmd->add_option("--train-trg", f.train_trg, "Training target text, aligned with --train-src");
  cmd->add_option("--train-tsv", f.train_tsv, "Training pairs as source<TAB>target lines");
  cmd->add_option("--valid-src", f.valid_src, "Validation source text");
  cmd->add_option("--valid-trg", f.valid_trg, "Validation target text");
  cmd->add_option("--vocab", f.vocab, "Joint SentencePiece model (shares the embeddings)");
  cmd->add_option("--vocab-src", f.vocab_src, "Source SentencePiece model");
  cmd->add_option("--vocab-trg", f.vocab_trg, "Target SentencePiece model");
  cmd->add_option("--preset", f.preset, "Model size")
      ->check(CLI::IsMember({"tiny", "small", "quick", "base", "big"}));
  cmd->add_option("--model-config", f.model_config,
                  "A config.json with every model option (instead of --preset)");
  cmd->add_option("--config", f.config, "YAML or JSON file of these options (flags override)");
  cmd->add_option("--batch-tokens", f.batch_tokens,
                  "Padded source+target tokens a batch (each side + 1 for EOS/BOS)");
  cmd->add_option("--update-freq", f.update_freq, "Batches summed into one update");
  cmd->add_option("--max-updates", f.max_updates, "Stop after N updates (0: no limit)");
  cmd->add_option("--max-epochs", f.max_epochs, "Stop after N epochs (0: no limit)");
  cmd->add_option("--max-minutes", f.max_minutes, "Stop after M minutes of this run (0: none)");
  cmd->add_option("--lr", f.lr, "Peak learning rate (inverse_sqrt, constant)");
  cmd->add_option("--lr-schedule", f.schedule, "noam | inverse_sqrt | constant")
      ->check(CLI::IsMember({"noam", "inverse_sqrt", "constant"}));
  cmd->add_option("--lr-factor", f.lr_factor, "noam's factor");
  cmd->add_option("--warmup", f.warmup, "Warm-up updates");
  cmd->add_option("--label-smoothing", f.label_smoothing, "Label smoothing epsilon");
  cmd->add_option("--clip-norm", f.clip_norm, "Clip the global gradient norm (0: off)");
  cmd->add_option("--optimizer", f.optimizer, "adam | adamw (decoupled weight decay)")
      ->check(CLI::IsMember({"adam", "adamw"}));
  cmd->add_option("--weight-decay", f.weight_decay, "Weight decay");
  cmd->add_option("--dropout", f.dropout, "Dropout (default: the preset's)");
  cmd->add_option("--max-length", f.max_length, "Skip pairs with a side longer than N pieces");
  cmd->add_option("--max-ratio", f.max_ratio, "Skip pairs whose length ratio exceeds R (0: off)");
  cmd->add_option("--seed", f.seed, "Seed of initialisation, batching and dropout");
  cmd->add_option("--threads", f.threads, "Threads (0: all cores)");
  cmd->add_option("--device", f.device, "cpu (cuda: not in this build)");
  cmd->add_option("--precision", f.precision,
                  "GEMMs of training: fp32, bf16 mixed precision (f32 master weights), or auto "
                  "(bf16 where the CPU has AVX512-BF16, fp32 elsewhere)")
      ->check(CLI::IsMember({"fp32", "bf16", "auto"}));
  cmd->add_option("--save-every", f.save_every, "Checkpoint every N updates (0: at the end)");
  cmd->add_option("--valid-every", f.valid_every, "Validate every N updates (0: at the end)");
  cmd->add_option("--valid-batch-tokens", f.valid_batch_tokens, "Batch size for validation");
  cmd->add_flag("--valid-bleu", f.valid_bleu, "Also compute validation BLEU (greedy)");
  cmd->add_option("--metric", f.metric,
                  "Metric for best/ and early stopping: loss|ppl|accuracy|bleu "
                  "(default: bleu with --valid-bleu, else ppl)")
      ->check(CLI::IsMember({"loss", "ppl", "accuracy", "bleu"}));
  cmd->add_option("--keep-last", f.keep_last, "Keep the last N checkpoints in DIR/checkpoints");
  cmd->add_option("--early-stopping", f.early_stopping,
                  "Stop after N validations without improvement (0: off)");
  cmd->add_option("--log-every", f.log_every, "Log a line every N updates");
  cmd->add_option("--max-nonfinite", f.max_nonfinite,
                  "Stop after N non-finite updates in a row (each is skipped)");
  cmd->add_flag("--overwrite", f.overwrite,
                "Start from scratch, replacing the model, checkpoints and training state in DIR");
  cmd->callback([cmd] { run_train(cmd, f); });
}

}  // namespace tfm::cli
