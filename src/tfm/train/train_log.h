// Where training talks: each line to DIR/train.log and to the caller's callbacks, with the
// structured events (updates, log windows, validations, checkpoints) beside them, and, when asked,
// the windows' and validations' scalars to a TensorBoard event file. What a user sees (the CLI's
// progress bar and stderr lines) is one consumer of the callbacks.
#pragma once

#include <memory>
#include <string>

#include "tfm/core/output_file.h"
#include "tfm/train/event_file.h"
#include "tfm/trainer.h"

namespace tfm {

class TrainLog {
 public:
  // log_path: a file the lines are appended to ("" for none).
  explicit TrainLog(const std::string& log_path, TrainCallbacks callbacks = {});
  ~TrainLog();
  // From now on the scalars also go to a new event file in `dir` (TensorBoard's): train/loss,
  // train/perplexity, train/accuracy, train/learning_rate, train/grad_norm,
  // train/tokens_per_second at each log window; valid/loss, valid/perplexity, valid/accuracy
  // (and valid/bleu) at each validation; each at its update.
  void write_events_to(const std::string& dir);
  // The run starts after `update` (0: from scratch): the event file's SessionLog START.
  void started(int64_t update);
  // A full line, to the log file (flushed; a write error, such as a full disk, throws naming the
  // log: a run whose log is lost must not go on silently), then to on_log.
  void line(const std::string& text);
  void update(const TrainUpdateEvent& e) const;
  void stats(const TrainStatsEvent& e) const;
  void validation(const TrainValidationEvent& e) const;
  void checkpoint(int64_t update, const std::string& dir) const;
  bool wants_updates() const { return static_cast<bool>(callbacks_.on_update); }

 private:
  std::unique_ptr<OutputFile> file_;
  std::unique_ptr<EventFileWriter> events_;
  TrainCallbacks callbacks_;
};

// "1:02:03" / "4:05" for seconds.
std::string format_duration(double seconds);
// "12.3k" / "4.56M" / "789".
std::string format_count(double n);
// A bar of `width` cells for a fraction in [0, 1].
std::string progress_bar(double fraction, int width = 24);

}  // namespace tfm
