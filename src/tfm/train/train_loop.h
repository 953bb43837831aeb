// The training loop under the public tfm::Trainer (runtime/trainer.cpp): batches → label-smoothed
// loss → gradients → clipped Adam update under a schedule, with gradient accumulation, validation,
// early stopping, checkpoints (last, best, last N) and exact resume from DIR/train_state
// (see train_state.h).
//
// Exactness. Everything random or order-dependent is a function of saved state: the batch
// sequence (Batcher: seed + position), dropout (a Philox Generator: seed + next stream), the
// parameters and Adam moments (saved bit for bit), and the running log sums. With the same
// thread count, a run stopped at any point (SIGKILL included) and restarted with the same command
// reaches bit-identical parameters and logs identical losses.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "tfm/data/batcher.h"
#include "tfm/dist/world.h"
#include "tfm/model/transformer.h"
#include "tfm/train/optimizer.h"
#include "tfm/train/schedule.h"
#include "tfm/train/train_log.h"
#include "tfm/train/train_state.h"

namespace tfm {

enum class ValidMetric { loss, ppl, accuracy, bleu };
ValidMetric parse_valid_metric(const std::string& name);  // loss | ppl | accuracy | bleu
const char* to_string(ValidMetric m);

struct TrainLoopOptions {
  std::string model_dir;
  int64_t update_freq = 1;  // batches whose gradients one update sums
  int64_t max_updates = 0;  // 0: no limit (the limits below still apply)
  int64_t max_epochs = 0;   // 0: no limit
  double max_minutes = 0;   // wall time of this run; 0: no limit
  ScheduleOptions schedule;
  AdamOptions adam;
  double label_smoothing = 0.1;
  double clip_norm = 0.0;      // max global gradient norm; 0: no clipping
  int64_t valid_every = 1000;  // updates; 0: only at the end
  int64_t save_every = 1000;   // updates; 0: only at the end (and on a stop signal)
  int64_t log_every = 100;     // updates
  int64_t keep_last = 3;       // DIR/checkpoints/update-N kept (0: none)
  int64_t early_stopping = 0;  // stop after this many validations without improvement; 0: off
  ValidMetric metric = ValidMetric::ppl;  // best checkpoint and early stopping
  int64_t max_nonfinite = 10;             // stop after this many non-finite updates in a row
  int64_t valid_batch_tokens = 8192;
  uint64_t dropout_seed = 0;
  std::vector<std::string> files_to_copy;  // copied into best/ and checkpoints/ (vocabularies)
  // The processes training together (null: this one alone). Each update takes world size ×
  // update_freq batches of the one batch stream, rank r the r-th update_freq of them; gradients
  // and log sums are added in rank order; rank 0 alone validates, logs and writes files.
  dist::World* world = nullptr;
};

class OverlappedGradientSum;  // data_parallel.h

// What one update's batches add up to: this process's, or every rank's (summed).
struct StepStats {
  double loss_sum = 0, nll_sum = 0;  // label-smoothed loss and NLL, summed over target tokens
  int64_t tokens = 0, correct = 0, sentences = 0, src_tokens = 0;

  StepStats& operator+=(const StepStats& o);
  // Every rank's stats added in rank order (one allgather): every rank gets the same bits.
  StepStats summed(dist::World& world) const;
};

// BLEU of the model on the validation set (e.g. greedy decoding + detokenisation + corpus BLEU).
using BleuHook = std::function<double(const Transformer&)>;

struct TrainLoopResult {
  int64_t updates = 0;
  std::string stop_reason;   // "max updates", "max epochs", "time limit", "early stopping", ...
  bool interrupted = false;  // stopped by the stop flag (SIGINT/SIGTERM)
  double last_valid_ppl = 0, best_metric = 0;
  int64_t best_update = 0;
};

class TrainLoop {
 public:
  // `valid` may be empty (no validation). The model's weights are its initial ones; a run that
  // finds DIR/train_state overwrites them with the saved ones.
  TrainLoop(TrainLoopOptions options, Transformer& model, Batcher train, std::vector<Example> valid,
            TrainLog& log, BleuHook bleu = {});

  // Trains until a limit is reached, early stopping triggers, or *stop becomes true (checked
  // after each update); saves a checkpoint on the way out.
  TrainLoopResult run(const std::atomic<bool>* stop = nullptr);

  // The loss of each update made by this run, in order (for tests).
  const std::vector<double>& update_losses() const { return update_losses_; }
  const TrainProgress& progress() const { return p_; }

 private:
  dist::World& world() const;
  bool leader() const { return world().rank() == 0; }
  // The stop decisions every rank must share, agreed before each update: a stop request seen by
  // any rank, and rank 0's clock and early stopping. Empty: go on.
  std::string agreed_stop(const std::atomic<bool>* stop, double run_seconds);
  bool resume();
  // One update (update_freq batches). False when it was skipped as non-finite.
  bool train_update();
  // The forward and backward passes of this rank's batches of the update; the gradients add up
  // in the arena (the last backward pass overlapping `gradient_sum`'s buckets, with several
  // ranks).
  StepStats accumulate_gradients(OverlappedGradientSum* gradient_sum);
  // A non-finite loss or gradient norm: no update; a stop (saved) after max_nonfinite in a row.
  void skip_nonfinite(bool loss_finite);
  // The optimiser's step and the progress counters.
  void apply_update(const StepStats& step, double gnorm, double scale);
  void validate();
  void save_checkpoint();
  void log_window();
  void copy_files(const std::string& dir) const;
  double metric_value(double loss, double ppl, double accuracy, double bleu) const;
  std::string limit_reached(double run_seconds) const;

  TrainLoopOptions o_;
  Transformer& model_;
  Batcher train_;
  std::vector<Example> valid_;
  TrainLog& log_;
  BleuHook bleu_;
  Generator dropout_gen_;
  std::vector<std::pair<std::string, Tensor>> params_;
  Adam adam_;
  TrainProgress p_;
  std::vector<double> update_losses_;
  double window_start_ = 0;       // run seconds at the start of the log window
  double run_start_ = 0;          // clock at the start of this run
  double run_start_elapsed_ = 0;  // training seconds of earlier runs
  double elapsed_now() const;     // training seconds so far, earlier runs included
  bool validated_since_save_ = false;
  int64_t last_saved_update_ = -1;
  bool stop_early_ = false;
  double last_valid_ppl_ = 0;
  double comm_seconds_ = 0;                        // waiting for the ranks' sums, in the log window
  int64_t buckets_early_ = 0, buckets_total_ = 0;  // gradient buckets, in the log window
};

}  // namespace tfm
