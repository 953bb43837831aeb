#include "tfm/train/schedule.h"

#include <algorithm>
#include <cmath>

#include "tfm/core/check.h"

namespace tfm {

ScheduleKind parse_schedule(const std::string& name) {
  if (name == "noam") return ScheduleKind::noam;
  if (name == "inverse_sqrt") return ScheduleKind::inverse_sqrt;
  if (name == "constant") return ScheduleKind::constant;
  if (name == "linear") return ScheduleKind::linear;
  TFM_FAIL() << "unknown learning-rate schedule \"" << name
             << "\" (noam, inverse_sqrt, constant, linear)";
  return ScheduleKind::constant;
}

const char* to_string(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::noam:
      return "noam";
    case ScheduleKind::inverse_sqrt:
      return "inverse_sqrt";
    case ScheduleKind::constant:
      return "constant";
    case ScheduleKind::linear:
      return "linear";
  }
  return "?";
}

double learning_rate(const ScheduleOptions& o, int64_t n, double seconds) {
  TFM_CHECK(n >= 1) << "learning_rate: update number must be >= 1, got " << n;
  TFM_CHECK(o.warmup >= 0) << "learning-rate warmup must be >= 0, got " << o.warmup;
  const double step = static_cast<double>(n), warmup = static_cast<double>(o.warmup);
  switch (o.kind) {
    case ScheduleKind::noam:
      TFM_CHECK(o.warmup > 0) << "the noam schedule needs warmup > 0 updates";
      TFM_CHECK(o.d_model > 0 && o.factor > 0) << "noam: d_model and factor must be > 0";
      return o.factor / std::sqrt(static_cast<double>(o.d_model)) *
             std::min(1.0 / std::sqrt(step), step * std::pow(warmup, -1.5));
    case ScheduleKind::inverse_sqrt:
      TFM_CHECK(o.lr > 0) << "learning rate must be > 0, got " << o.lr;
      if (o.warmup == 0) return o.lr / std::sqrt(step);
      return step < warmup ? o.lr * step / warmup : o.lr * std::sqrt(warmup / step);
    case ScheduleKind::constant:
      TFM_CHECK(o.lr > 0) << "learning rate must be > 0, got " << o.lr;
      return o.warmup == 0 ? o.lr : o.lr * std::min(1.0, step / warmup);
    case ScheduleKind::linear: {
      TFM_CHECK(o.lr > 0) << "learning rate must be > 0, got " << o.lr;
      TFM_CHECK(o.total > 0 || o.total_seconds > 0)
          << "the linear schedule decays to the end of the budget, so it needs a budget of "
             "updates or of time (max_updates or max_minutes)";
      TFM_CHECK(o.total == 0 || o.total > o.warmup)
          << "the linear schedule needs a budget of updates larger than the warmup (" << o.warmup
          << "), got " << o.total;
      double f = 0;
      if (o.total > 0)
        f = std::max(0.0, step - warmup) / static_cast<double>(o.total - o.warmup + 1);
      if (o.total_seconds > 0) f = std::max(f, seconds / o.total_seconds);
      const double ramp = o.warmup == 0 ? 1.0 : std::min(1.0, step / warmup);
      return o.lr * ramp * std::max(0.0, 1.0 - f);
    }
  }
  return 0.0;
}

}  // namespace tfm
