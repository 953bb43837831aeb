// Where training talks: full lines to stderr and to DIR/train.log, and on a terminal a live
// progress bar that those lines scroll past.
#pragma once

#include <memory>
#include <string>

#include "tfm/core/output_file.h"

namespace tfm {

class TrainLog {
 public:
  // log_path: a file the lines are appended to ("" for none). interactive: stderr is a terminal
  // (the bar is drawn only then; plain lines otherwise, so redirected logs stay clean).
  TrainLog(const std::string& log_path, bool interactive);
  ~TrainLog();
  // A full line, to stderr and the log file (flushed; a write error, such as a full disk, throws
  // naming the log: a run whose log is lost must not go on silently).
  void line(const std::string& text);
  // Redraws the bar line (terminal only; not written to the file).
  void progress(const std::string& text);
  bool interactive() const { return interactive_; }

 private:
  void clear_bar();
  std::unique_ptr<OutputFile> file_;
  bool interactive_;
  bool bar_shown_ = false;
};

// "1:02:03" / "4:05" for seconds.
std::string format_duration(double seconds);
// "12.3k" / "4.56M" / "789".
std::string format_count(double n);
// A bar of `width` cells for a fraction in [0, 1].
std::string progress_bar(double fraction, int width = 24);

}  // namespace tfm
