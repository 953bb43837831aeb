// Learning-rate schedules, as functions of the update number n = 1, 2, … (the update about to be
// made). All three warm up over `warmup` updates; they differ in what follows.
//   noam          factor · d_model^-0.5 · min(n^-0.5, n · warmup^-1.5)  (the paper, §5.3; `lr` is
//                 unused: the peak, at n = warmup, is factor · (d_model · warmup)^-0.5)
//   inverse_sqrt  lr · n / warmup while n < warmup, then lr · sqrt(warmup / n)  (fairseq's, with
//                 the warm-up starting from 0)
//   constant      lr · min(1, n / warmup)
// warmup = 0 means no warm-up (noam needs warmup > 0).
#pragma once

#include <cstdint>
#include <string>

namespace tfm {

enum class ScheduleKind { noam, inverse_sqrt, constant };

struct ScheduleOptions {
  ScheduleKind kind = ScheduleKind::inverse_sqrt;
  double lr = 5e-4;  // peak learning rate (inverse_sqrt, constant)
  int64_t warmup = 4000;
  double factor = 1.0;    // noam's multiplier
  int64_t d_model = 512;  // noam's scale
};

ScheduleKind parse_schedule(const std::string& name);  // noam | inverse_sqrt | constant
const char* to_string(ScheduleKind kind);

// The learning rate of update n (n >= 1). Throws on invalid options.
double learning_rate(const ScheduleOptions& options, int64_t n);

}  // namespace tfm
