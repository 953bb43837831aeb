// Learning-rate schedules, as functions of the update number n = 1, 2, … (the update about to be
// made). All three warm up over `warmup` updates; they differ in what follows.
//   noam          factor · d_model^-0.5 · min(n^-0.5, n · warmup^-1.5)  (the paper, §5.3; `lr` is
//                 unused: the peak, at n = warmup, is factor · (d_model · warmup)^-0.5)
//   inverse_sqrt  lr · n / warmup while n < warmup, then lr · sqrt(warmup / n)  (fairseq's, with
//                 the warm-up starting from 0)
//   constant      lr · min(1, n / warmup)
//   linear        lr · min(1, n / warmup) · (1 - f), f the fraction of the budget spent: for a
//   fixed
//                 budget, where decaying to zero learns more than a schedule that never ends
//                 (docs/history/performance.md, "Quick start"). The budget is `total` updates, f =
//                 (n - warmup) / (total - warmup + 1) from the end of the warm-up, and/or
//                 `total_seconds` of training time, f = seconds / total_seconds; with both, the
//                 larger f (the budget that runs out first). A time budget makes the rates depend
//                 on the clock.
// warmup = 0 means no warm-up (noam needs warmup > 0).
#pragma once

#include <cstdint>
#include <string>

namespace tfm {

enum class ScheduleKind { noam, inverse_sqrt, constant, linear };

struct ScheduleOptions {
  ScheduleKind kind = ScheduleKind::inverse_sqrt;
  double lr = 5e-4;          // peak learning rate (inverse_sqrt, constant, linear)
  int64_t total = 0;         // linear: the budget of updates (the last update), 0: none
  double total_seconds = 0;  // linear: the budget of training seconds, 0: none
  int64_t warmup = 4000;
  double factor = 1.0;    // noam's multiplier
  int64_t d_model = 512;  // noam's scale
};

ScheduleKind parse_schedule(const std::string& name);  // noam | inverse_sqrt | constant | linear
const char* to_string(ScheduleKind kind);

// The learning rate of update n (n >= 1), `seconds` of training into a time budget. Throws on
// invalid options.
double learning_rate(const ScheduleOptions& options, int64_t n, double seconds = 0);

}  // namespace tfm
