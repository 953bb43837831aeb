// tfm::Trainer: trains a model directory on a parallel corpus, resuming it when it holds a
// training state.
//
//   tfm::TrainOptions o;
//   o.model_dir = "model/";
//   o.train_src = "train.de", o.train_trg = "train.en", o.vocab = "joint.model";
//   o.valid_src = "valid.de", o.valid_trg = "valid.en";
//   o.max_updates = 20000;
//   tfm::TrainCallbacks cb;
//   cb.on_log = [](const std::string& line) { std::cerr << line << "\n"; };
//   tfm::TrainResult r = tfm::Trainer(o, cb).train();
//
// The options are those of `tfm train` (docs/cli.md), under the flags' names with '_' for '-';
// `compute_type` is --precision. The directory holds what the command writes: model.safetensors
// and config.json (the last update), best/ (the best validation), checkpoints/update-N,
// train_state/ (exact resume), train.log and train_config.json (these options, as a config file
// `tfm train --config` reads); with `tensorboard`, TensorBoard event files in that directory.
//
// One Trainer a directory at a time: the constructor takes the directory's lock (another run on
// it is an error) and keeps it until destruction. Everything that can be checked before training
// is checked in the constructor: the options, the files, the vocabularies, the data and, when
// resuming, that the data and options match the saved state.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tfm/error.h"
#include "tfm/model_info.h"
#include "tfm/types.h"

namespace tfm {

struct TrainOptions {
  std::string model_dir;   // created if missing; resumed when it holds train_state/
  bool overwrite = false;  // start from scratch, removing an earlier run's model and state

  // Data: aligned source and target files (one sentence a line), or source<TAB>target lines.
  std::string train_src, train_trg, train_tsv;
  std::string valid_src, valid_trg;  // optional validation set
  // SentencePiece models: one joint vocabulary (which shares the embeddings), or one a side.
  std::string vocab, vocab_src, vocab_trg;
  // A decoder-only model (a language model): train_trg (and valid_trg) alone, one sentence a
  // line, and `vocab`; each sentence is learned as BOS sentence EOS. It continues prompts
  // (Translator::generate_batch, tfm generate). Validation BLEU does not apply.
  bool decoder_only = false;

  // The model: a preset (tiny | small | quick | base | big) or a config.json with every option.
  std::string preset = "small";
  std::string model_config;
  double dropout = -1;  // < 0: the preset's

  // Batches: padded source + target tokens a batch; pairs with a side longer than max_length
  // pieces, or a length ratio over max_ratio (0: no limit), are skipped and counted.
  int64_t batch_tokens = 4096;
  int64_t update_freq = 1;  // batches summed into one update
  int64_t max_length = 256;
  double max_ratio = 3.0;
  uint64_t seed = 1;  // initialisation, batch order and dropout

  // When to stop (0: no limit; at least one limit, early stopping or request_stop ends a run).
  int64_t max_updates = 0;
  int64_t max_epochs = 0;
  double max_minutes = 0;  // wall time of this run

  // Optimisation.
  std::string lr_schedule =
      "inverse_sqrt";              // noam | inverse_sqrt | constant | linear (to max_updates)
  double lr = 5e-4;                // the peak (inverse_sqrt, constant)
  double lr_factor = 1.0;          // noam's factor
  int64_t warmup = 4000;           // updates
  std::string optimizer = "adam";  // adam | adamw (decoupled weight decay)
  double weight_decay = 0.0;
  double label_smoothing = 0.1;
  double clip_norm = 0.0;  // max global gradient norm; 0: no clipping

  // Where and in what arithmetic: training takes float32, bfloat16 (mixed precision: f32
  // parameters, gradients and optimiser) or automatic (bf16 where the CPU multiplies bf16, and
  // on a GPU). device cuda (a build with the CUDA backend, a GPU, one process) trains in float32
  // or bfloat16 (cuBLASLt bf16 GEMMs on the tensor cores).
  Device device = Device::cpu;
  ComputeType compute_type = ComputeType::float32;
  int threads = 0;  // 0: all cores

  // Validation, checkpoints and logging (every N updates; 0: only at the end).
  int64_t valid_every = 1000;
  int64_t valid_batch_tokens = 8192;
  bool valid_bleu = false;     // also greedy-decode the validation set and score BLEU
  std::string metric;          // best/ and early stopping: loss | ppl | accuracy | bleu;
                               // empty: bleu with valid_bleu, else ppl
  int64_t early_stopping = 0;  // stop after N validations without improvement; 0: off
  int64_t save_every = 1000;
  int64_t keep_last = 3;  // checkpoints/update-N kept
  int64_t log_every = 100;
  int64_t max_nonfinite = 10;  // stop after N non-finite updates in a row (each is skipped)
  // A directory for TensorBoard event files ("": none): each run writes a new file there with
  // the log windows' and validations' scalars at their updates (rank 0 of a data-parallel run).
  std::string tensorboard;
};

// After each update.
struct TrainUpdateEvent {
  int64_t update = 0;       // updates so far, earlier runs of the directory included
  int64_t max_updates = 0;  // the limit, 0: none
  int64_t epoch = 0;        // 1-based
  double loss = 0;          // this update's label-smoothed loss a target token
  double run_seconds = 0;   // this run's wall time
  // Of the nearest limit known (updates or minutes), in [0, 1]; negative when there is none.
  double fraction_done = -1;
};

// Every log_every updates: means over the window since the last one.
struct TrainStatsEvent {
  int64_t update = 0, epoch = 0;
  double loss = 0, perplexity = 0, accuracy = 0;  // label-smoothed loss; ppl and accuracy of NLL
  double learning_rate = 0, grad_norm = 0;
  double tokens_per_second = 0;              // source + target tokens
  int64_t sentences = 0, target_tokens = 0;  // since the directory's first update
  double elapsed_seconds = 0;                // training time, earlier runs included
};

struct TrainValidationEvent {
  int64_t update = 0;
  double loss = 0, perplexity = 0, accuracy = 0;
  double bleu = -1;       // negative without valid_bleu
  bool improved = false;  // best/ was saved
  double best_metric = 0;
  int64_t best_update = 0;
};

// Called on the thread running train(). A callback may call Trainer::request_stop(); one that
// throws ends train() with its exception, the directory as of the last checkpoint.
struct TrainCallbacks {
  std::function<void(const std::string& line)> on_log;  // each line of train.log, as written
  std::function<void(const TrainUpdateEvent&)> on_update;
  std::function<void(const TrainStatsEvent&)> on_stats;
  std::function<void(const TrainValidationEvent&)> on_validation;
  std::function<void(int64_t update, const std::string& dir)> on_checkpoint;
};

struct TrainResult {
  int64_t updates = 0;         // in the directory, earlier runs included
  std::string stop_reason;     // max updates | max epochs | time limit | early stopping |
                               // interrupted
  bool interrupted = false;    // by request_stop(); a checkpoint was saved
  double elapsed_seconds = 0;  // training time, earlier runs included
  int64_t best_update = 0;     // 0: no validation improved (or none ran)
  double best_metric = 0;
  double last_valid_perplexity = -1;  // negative when no validation ran in this run
  std::string model_dir, best_dir;    // best_dir empty when there is no best/
};

// Every value in range and every combination allowed: what the Trainer checks first, before it
// touches a file. tfm::Error naming the option by its field name.
void validate_train_options(const TrainOptions& options);

class Trainer {
 public:
  // Checks the options, locks and prepares the directory, reads the vocabularies and the data,
  // and builds the model or loads its training state. Every problem is a tfm::Error.
  explicit Trainer(TrainOptions options, TrainCallbacks callbacks = {});
  ~Trainer();
  Trainer(Trainer&&) noexcept;
  Trainer& operator=(Trainer&&) noexcept;

  // Trains until a limit, early stopping or request_stop(); saves a checkpoint on the way out.
  // Once per Trainer.
  TrainResult train();

  // Ends train() after the current update, with a checkpoint. Safe from any thread and from a
  // signal handler (it only sets an atomic flag).
  void request_stop() noexcept;

  bool resuming() const;                // the directory held a training state
  const ModelInfo& model_info() const;  // the model being trained
  const TrainOptions& options() const;  // compute_type resolved, metric filled in

  class Impl;
  explicit Trainer(std::unique_ptr<Impl> impl);  // tfm's own front ends

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tfm
