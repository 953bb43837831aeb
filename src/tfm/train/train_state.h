// What a training run needs to continue exactly where it stopped: `DIR/train_state/`.
//
//   state.safetensors   the parameters ("model.<name>"), Adam's moments ("adam.m.<name>",
//                       "adam.v.<name>") and, in __metadata__, the progress below as JSON and
//                       the model config — one file written atomically, so parameters,
//                       moments and counters can never come from different updates;
//   state.json          a readable copy of the progress (informational; never read back).
//
// A resumed run loads the parameters from here, not from DIR/model.safetensors: a kill between
// the two writes of a checkpoint leaves them from different updates, and this one is written
// first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tfm/data/batcher.h"
#include "tfm/model/transformer.h"
#include "tfm/train/optimizer.h"

namespace tfm {

// Running sums over the updates since the last log line (kept in the state so the lines after a
// resume are the ones an uninterrupted run prints).
struct LogWindow {
  int64_t updates = 0, sentences = 0, src_tokens = 0, trg_tokens = 0, correct = 0;
  double loss_sum = 0;   // Σ label-smoothed loss × tokens
  double nll_sum = 0;    // Σ -log p(target)
  double gnorm_sum = 0;  // Σ gradient norms (before clipping)
};

struct TrainProgress {
  int64_t updates = 0;            // optimizer updates made (skipped ones not counted)
  BatchPosition position;         // the next training batch
  uint64_t data_fingerprint = 0;  // Batcher::fingerprint() of the run that saved this
  uint64_t dropout_seed = 0, dropout_stream = 0;          // the dropout Generator's state
  int64_t sentences = 0, src_tokens = 0, trg_tokens = 0;  // totals
  int64_t nonfinite_skipped = 0, nonfinite_in_a_row = 0;
  double best_metric = 0;  // valid only when best_update > 0
  int64_t best_update = 0;
  int64_t bad_validations = 0;  // validations since the best one
  int64_t last_valid_update = 0;
  double elapsed_seconds = 0;  // training time over all runs
  int64_t world_size = 1;      // processes of the run that saved it (dist::World)
  LogWindow window;

  std::string to_json() const;
  static TrainProgress from_json(const std::string& text);  // throws on missing/invalid fields
};

// DIR/train_state exists and holds a state file.
bool has_train_state(const std::string& model_dir);

// What a run would overwrite in DIR besides a train state: model.safetensors, best/ or
// checkpoints/ ("" when there is none). A run without a usable state must not start from scratch
// over these (tfm train refuses without --overwrite).
std::string existing_run_output(const std::string& model_dir);

// The names a run writes in DIR: a model directory's (model_file_names) and best, checkpoints,
// train_state, train.log and train_config.json (the lock file aside: it is never removed).
const std::vector<std::string>& run_file_names();

// Removes everything a run writes in DIR (model, config, best/, checkpoints/, train_state/,
// train.log, train_config.json, vocabularies): tfm train --overwrite. Other files stay.
void remove_run_output(const std::string& model_dir);

// The temporaries a killed run left in DIR, DIR/train_state, DIR/best and DIR/checkpoints (a
// state temp file is a full copy of the optimiser state: hundreds of MB). Only while holding
// DIR's lock. Returns the paths removed.
std::vector<std::string> remove_stale_run_temp_files(const std::string& model_dir);

// Writes DIR/train_state/state.safetensors (atomically) and state.json.
void save_train_state(const std::string& model_dir, const Transformer& model, const Adam& adam,
                      const TrainProgress& progress);

// The model config a saved state was made for (resume builds the model from it).
ModelConfig read_train_state_config(const std::string& model_dir);

// Loads the state into model (which must have the saved config) and adam; returns the progress.
// Any problem (corrupt file, other model config, missing tensors) is an error that names the
// file and says how to start over.
TrainProgress load_train_state(const std::string& model_dir, Transformer& model, Adam& adam);

}  // namespace tfm
