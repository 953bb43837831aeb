// tfm train: flag parsing (and --config files) into tfm::TrainOptions, one tfm::Trainer, and the
// console: log lines on stderr and, on a terminal, a progress bar they scroll past. A first
// SIGINT/SIGTERM/SIGUSR1 asks the trainer to stop (it saves a checkpoint); a second one kills.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <iostream>

#include "tfm/cli/commands.h"
#include "tfm/cli/flags.h"
#include "tfm/cli/usage.h"
#include "tfm/core/check.h"
#include "tfm/core/suggest.h"
#include "tfm/dist/world.h"
#include "tfm/runtime/train_options.h"
#include "tfm/train/config_file.h"
#include "tfm/train/train_log.h"
#include "tfm/trainer.h"

namespace tfm::cli {

namespace {

// What the API's checks call an option on this command line.
const OptionSpeller& flag_name() {
  static const OptionSpeller speller =
      flag_speller({{"model_dir", "--model"}, {"compute_type", "--precision"}});
  return speller;
}

Trainer* g_trainer = nullptr;

extern "C" void on_stop_signal(int) {
  if (g_trainer != nullptr) g_trainer->request_stop();
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // A second signal takes the default action: an impatient user wins. On the alternate stack:
  // the signal may land while oneDNN's GEMM has rsp in the heap (core/signal_stack.h).
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // Open MPI's mpirun forwards SIGUSR1 to the ranks and exits with their status; SIGTERM and
  // SIGINT it turns into a kill of the job (docs/distributed.md, "Stopping a run").
  sigaction(SIGUSR1, &sa, nullptr);
}

// Options from --config the command line did not give.
void apply_config_file(CLI::App* cmd, const std::string& path) {
  for (const auto& [key, values] : read_config_file(path)) {
    CLI::Option* opt = nullptr;
    try {
      opt = cmd->get_option("--" + key);
    } catch (const CLI::OptionNotFound&) {
      std::vector<std::string> keys;
      for (const std::string& flag : flag_names(*cmd))
        if (flag.rfind("--", 0) == 0) keys.push_back(flag.substr(2));
      const std::vector<std::string> near = closest_names(key, keys);
      TFM_FAIL_ARG() << path << ": unknown option \"" << key << "\""
                     << (near.empty() ? " (see tfm train --help)"
                                      : "; did you mean " + one_of(near, "\"") + "?");
    }
    TFM_CHECK(key != "config") << path << ": a config file cannot name another config file";
    // A list for an option of one value would leave only its last entry (CLI11 keeps the last).
    TFM_CHECK_ARG(values.size() <= 1 || opt->get_items_expected_max() > 1)
        << path << ": option \"" << key << "\" takes one value, and the file gives a list of "
        << values.size();
    if (opt->count() > 0) continue;  // the command line wins
    try {
      for (const auto& v : values) opt->add_result(v);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      TFM_FAIL() << path << ": option \"" << key << "\": " << e.what();
    }
  }
}

// The trainer's lines on stderr; on a terminal, a bar redrawn after each update that the lines
// scroll past (redirected logs stay plain lines).
class Console {
 public:
  explicit Console(bool interactive) : interactive_(interactive) {}
  ~Console() {
    if (bar_shown_) std::cerr << "\n";
  }
  void line(const std::string& text) {
    clear_bar();
    std::cerr << text << "\n" << std::flush;
  }
  void update(const TrainUpdateEvent& e) {
    std::string bar = "update " + std::to_string(e.update) +
                      (e.max_updates > 0 ? "/" + std::to_string(e.max_updates) : "") + " | epoch " +
                      std::to_string(e.epoch) + " | loss " + fixed(e.loss) + " | " +
                      format_duration(e.run_seconds);
    if (e.fraction_done >= 0) {
      bar = progress_bar(e.fraction_done) + " " + bar;
      if (e.fraction_done > 0)
        bar += " | ETA " + format_duration(e.run_seconds * (1 - e.fraction_done) / e.fraction_done);
    }
    std::cerr << "\r\033[K" << bar << std::flush;
    bar_shown_ = true;
  }
  TrainCallbacks callbacks() {
    TrainCallbacks cb;
    cb.on_log = [this](const std::string& s) { line(s); };
    if (interactive_) cb.on_update = [this](const TrainUpdateEvent& e) { update(e); };
    return cb;
  }

 private:
  static std::string fixed(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return buf;
  }
  void clear_bar() {
    if (bar_shown_) {
      std::cerr << "\r\033[K";
      bar_shown_ = false;
    }
  }
  bool interactive_;
  bool bar_shown_ = false;
};

struct Flags {
  TrainOptions o;
  std::string config, device = "cpu", precision = "fp32";
};

void run_train(CLI::App* cmd, Flags& f) {
  if (!f.config.empty()) apply_config_file(cmd, f.config);
  TrainOptions o = f.o;
  o.device = parse_device(f.device);
  o.compute_type = parse_compute_type(f.precision);
  Console console(isatty(STDERR_FILENO) == 1);
  // Its errors in the flags' words.
  Trainer trainer = runtime::make_trainer(o, console.callbacks(), flag_name());
  g_trainer = &trainer;
  install_stop_handlers();
  const TrainResult r = trainer.train();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGUSR1, SIG_DFL);
  g_trainer = nullptr;
  if (dist::world().rank() != 0) return;  // rank 0 speaks for a data-parallel run
  if (r.interrupted) {
    console.line(std::string("interrupted: checkpoint saved; run the same command again") +
                 (o.overwrite ? " without --overwrite" : "") + " to continue");
  }
  std::cout << "model: " << r.model_dir << " (last)";
  if (!r.best_dir.empty()) std::cout << ", " << r.best_dir << " (best validation)";
  std::cout << "\n";
}

}  // namespace

void add_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a model on a parallel corpus (resumes DIR)");
  // Repeating a flag (e.g. a script appending an override) means its last value, as in most tools.
  cmd->option_defaults()->always_capture_default()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  static Flags fl;
  TrainOptions& f = fl.o;
  cmd->add_option("-m,--model", f.model_dir,
                  "Model directory (resumed when DIR/train_state exists)")
      ->required();
  cmd->add_option("--train-src", f.train_src, "Training source text, one sentence a line");
  cmd->add_option("--train-trg", f.train_trg, "Training target text, aligned with --train-src");
  cmd->add_option("--train-tsv", f.train_tsv, "Training pairs as source<TAB>target lines");
  cmd->add_flag("--decoder-only", f.decoder_only,
                "A decoder-only model (a language model): --train-trg, --valid-trg and --vocab "
                "alone; tfm generate continues prompts with it");
  cmd->add_option("--valid-src", f.valid_src, "Validation source text");
  cmd->add_option("--valid-trg", f.valid_trg, "Validation target text");
  cmd->add_option("--vocab", f.vocab, "Joint SentencePiece model (shares the embeddings)");
  cmd->add_option("--vocab-src", f.vocab_src, "Source SentencePiece model");
  cmd->add_option("--vocab-trg", f.vocab_trg, "Target SentencePiece model");
  cmd->add_option("--preset", f.preset, "Model size")
      ->check(CLI::IsMember({"tiny", "small", "quick", "base", "big"}));
  cmd->add_option("--model-config", f.model_config,
                  "A config.json with every model option (instead of --preset)");
  cmd->add_option("--config", fl.config, "YAML or JSON file of these options (flags override)");
  cmd->add_option("--batch-tokens", f.batch_tokens,
                  "Padded source+target tokens a batch (each side + 1 for EOS/BOS)");
  cmd->add_option("--update-freq", f.update_freq, "Batches summed into one update");
  cmd->add_option("--max-updates", f.max_updates, "Stop after N updates (0: no limit)");
  cmd->add_option("--max-epochs", f.max_epochs, "Stop after N epochs (0: no limit)");
  cmd->add_option("--max-minutes", f.max_minutes, "Stop after M minutes of this run (0: none)");
  cmd->add_option("--lr", f.lr, "Peak learning rate (inverse_sqrt, constant, linear)");
  cmd->add_option("--lr-schedule", f.lr_schedule,
                  "noam | inverse_sqrt | constant | linear (decays to --max-updates)")
      ->check(CLI::IsMember({"noam", "inverse_sqrt", "constant", "linear"}));
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
  cmd->add_option("--device", fl.device, "cpu, or cuda (a CUDA build on a GPU machine; fp32)");
  cmd->add_option(
         "--precision", fl.precision,
         "GEMMs of training: fp32, bf16 mixed precision (f32 master weights), or auto "
         "(bf16 where bf16 GEMMs outrun fp32: AVX512-BF16 on AMD or with AMX; fp32 elsewhere)")
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
  cmd->add_option("--tensorboard", f.tensorboard,
                  "Write TensorBoard event files (loss, perplexity, learning rate, gradient norm, "
                  "tokens/s, validation) to this directory");
  cmd->add_flag("--overwrite", f.overwrite,
                "Start from scratch, replacing the model, checkpoints and training state in DIR");
  cmd->callback([cmd] { run_train(cmd, fl); });
}

}  // namespace tfm::cli
