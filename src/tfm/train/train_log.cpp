#include "tfm/train/train_log.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "tfm/core/check.h"

namespace tfm {

TrainLog::TrainLog(const std::string& log_path, TrainCallbacks callbacks)
    : callbacks_(std::move(callbacks)) {
  if (!log_path.empty()) {
    file_ = std::make_unique<OutputFile>(log_path, OutputFile::Mode::append);
  }
}

TrainLog::~TrainLog() = default;

void TrainLog::line(const std::string& text) {
  if (file_) {
    file_->write(text);
    file_->write("\n");
    file_->flush();
  }
  if (callbacks_.on_log) callbacks_.on_log(text);
}

void TrainLog::update(const TrainUpdateEvent& e) const {
  if (callbacks_.on_update) callbacks_.on_update(e);
}

void TrainLog::write_events_to(const std::string& dir) {
  events_ = std::make_unique<EventFileWriter>(dir);
  line("TensorBoard events: " + events_->path());
}

void TrainLog::started(int64_t update) {
  if (events_) events_->session_start(update + 1);
}

void TrainLog::stats(const TrainStatsEvent& e) const {
  if (events_) {
    events_->scalar("train/loss", e.update, e.loss);
    events_->scalar("train/perplexity", e.update, e.perplexity);
    events_->scalar("train/accuracy", e.update, e.accuracy);
    events_->scalar("train/learning_rate", e.update, e.learning_rate);
    events_->scalar("train/grad_norm", e.update, e.grad_norm);
    events_->scalar("train/tokens_per_second", e.update, e.tokens_per_second);
    events_->flush();
  }
  if (callbacks_.on_stats) callbacks_.on_stats(e);
}

void TrainLog::validation(const TrainValidationEvent& e) const {
  if (events_) {
    events_->scalar("valid/loss", e.update, e.loss);
    events_->scalar("valid/perplexity", e.update, e.perplexity);
    events_->scalar("valid/accuracy", e.update, e.accuracy);
    if (e.bleu >= 0) events_->scalar("valid/bleu", e.update, e.bleu);
    events_->flush();
  }
  if (callbacks_.on_validation) callbacks_.on_validation(e);
}

void TrainLog::checkpoint(int64_t update, const std::string& dir) const {
  if (callbacks_.on_checkpoint) callbacks_.on_checkpoint(update, dir);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

std::string format_count(double n) {
  char buf[32];
  if (n >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2fG", n / 1e9);
  else if (n >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2fM", n / 1e6);
  else if (n >= 1e4)
    std::snprintf(buf, sizeof buf, "%.1fk", n / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

std::string progress_bar(double fraction, int width) {
  fraction = std::clamp(std::isfinite(fraction) ? fraction : 0.0, 0.0, 1.0);
  const int filled = static_cast<int>(fraction * width + 0.5);
  std::string bar(static_cast<size_t>(width) + 2, '.');
  bar.front() = '[';
  bar.back() = ']';
  std::fill_n(bar.begin() + 1, filled, '#');
  return bar;
}

}  // namespace tfm
