// Learning-rate schedules against their formulas, evaluated by hand at chosen points.
#include <gtest/gtest.h>

#include <cmath>

#include "support/test_util.h"
#include "tfm/train/schedule.h"

namespace tfm {
namespace {

TEST(Schedule, NoamIsThePapersFormula) {
  ScheduleOptions o;
  o.kind = ScheduleKind::noam;
  o.d_model = 512;
  o.warmup = 4000;
  o.factor = 2.0;
  // Warm-up: linear in n, factor · d^-0.5 · n · warmup^-1.5.
  EXPECT_DOUBLE_EQ(learning_rate(o, 1), 2.0 / std::sqrt(512.0) / std::pow(4000.0, 1.5));
  EXPECT_DOUBLE_EQ(learning_rate(o, 100), 100 * learning_rate(o, 1));
  // Peak at n = warmup: factor · (d · warmup)^-0.5; then n^-0.5 decay.
  EXPECT_NEAR(learning_rate(o, 4000), 2.0 / std::sqrt(512.0 * 4000.0), 1e-15);
  EXPECT_DOUBLE_EQ(learning_rate(o, 16000), 2.0 / std::sqrt(512.0) / std::sqrt(16000.0));
  EXPECT_NEAR(learning_rate(o, 16000) / learning_rate(o, 4000), 0.5, 1e-12);
}

TEST(Schedule, InverseSqrtWarmsUpLinearlyThenDecays) {
  ScheduleOptions o;
  o.kind = ScheduleKind::inverse_sqrt;
  o.lr = 1e-3;
  o.warmup = 100;
  EXPECT_DOUBLE_EQ(learning_rate(o, 1), 1e-5);
  EXPECT_DOUBLE_EQ(learning_rate(o, 50), 5e-4);
  EXPECT_DOUBLE_EQ(learning_rate(o, 100), 1e-3);
  EXPECT_DOUBLE_EQ(learning_rate(o, 400), 5e-4);  // sqrt(100 / 400) = 1/2
  o.warmup = 0;
  EXPECT_DOUBLE_EQ(learning_rate(o, 4), 5e-4);
}

TEST(Schedule, ConstantWithWarmup) {
  ScheduleOptions o;
  o.kind = ScheduleKind::constant;
  o.lr = 2e-4;
  o.warmup = 10;
  EXPECT_DOUBLE_EQ(learning_rate(o, 5), 1e-4);
  EXPECT_DOUBLE_EQ(learning_rate(o, 10), 2e-4);
  EXPECT_DOUBLE_EQ(learning_rate(o, 100000), 2e-4);
  o.warmup = 0;
  EXPECT_DOUBLE_EQ(learning_rate(o, 1), 2e-4);
}

TEST(Schedule, LinearDecaysToZeroAtTheEndOfAnUpdateBudget) {
  ScheduleOptions o;
  o.kind = ScheduleKind::linear;
  o.lr = 1e-3;
  o.warmup = 100;
  o.total = 1099;  // 1000 updates after the warm-up's last
  EXPECT_DOUBLE_EQ(learning_rate(o, 1), 1e-5);
  EXPECT_DOUBLE_EQ(learning_rate(o, 50), 5e-4);
  EXPECT_DOUBLE_EQ(learning_rate(o, 100), 1e-3);
  EXPECT_DOUBLE_EQ(learning_rate(o, 600), 1e-3 * 500.0 / 1000.0);
  EXPECT_NEAR(learning_rate(o, 1099), 1e-6, 1e-15);  // the last update still moves
  EXPECT_DOUBLE_EQ(learning_rate(o, 1100), 0.0);     // past the budget: nothing
  // Straight: equal steps down between any two updates after the warm-up.
  EXPECT_NEAR(learning_rate(o, 300) - learning_rate(o, 301),
              learning_rate(o, 900) - learning_rate(o, 901), 1e-18);
  EXPECT_EQ(parse_schedule("linear"), ScheduleKind::linear);
  EXPECT_STREQ(to_string(ScheduleKind::linear), "linear");
}

TEST(Schedule, LinearOverATimeBudgetAndOverWhicheverEndsFirst) {
  ScheduleOptions o;
  o.kind = ScheduleKind::linear;
  o.lr = 2e-3;
  o.warmup = 10;
  o.total_seconds = 600;
  EXPECT_DOUBLE_EQ(learning_rate(o, 5, 0.0), 1e-3);         // warm-up ramp
  EXPECT_DOUBLE_EQ(learning_rate(o, 5, 60.0), 1e-3 * 0.9);  // the ramp times what time has left
  EXPECT_DOUBLE_EQ(learning_rate(o, 50, 150.0), 2e-3 * 0.75);
  EXPECT_DOUBLE_EQ(learning_rate(o, 50, 600.0), 0.0);
  EXPECT_DOUBLE_EQ(learning_rate(o, 50, 900.0), 0.0);  // never negative
  // With an update budget too, the budget spent faster decides.
  o.total = 109;                                              // f = (n - 10) / 100
  EXPECT_DOUBLE_EQ(learning_rate(o, 60, 60.0), 2e-3 * 0.5);   // updates: half, time: a tenth
  EXPECT_DOUBLE_EQ(learning_rate(o, 20, 300.0), 2e-3 * 0.5);  // time: half, updates: a tenth
}

TEST(Schedule, BadOptionsAreErrors) {
  EXPECT_TFM_ERROR(parse_schedule("cosine"), "unknown learning-rate schedule \"cosine\"");
  EXPECT_EQ(parse_schedule("noam"), ScheduleKind::noam);
  ScheduleOptions o;
  o.kind = ScheduleKind::noam;
  o.warmup = 0;
  EXPECT_TFM_ERROR(learning_rate(o, 1), "noam schedule needs warmup > 0");
  o.kind = ScheduleKind::constant;
  o.lr = -1;
  EXPECT_TFM_ERROR(learning_rate(o, 1), "learning rate must be > 0");
  o.lr = 1;
  EXPECT_TFM_ERROR(learning_rate(o, 0), "update number must be >= 1");
  o.kind = ScheduleKind::linear;
  EXPECT_TFM_ERROR(learning_rate(o, 1), "needs a budget of updates or of time");
  o.warmup = 100;
  o.total = 100;
  EXPECT_TFM_ERROR(learning_rate(o, 1), "budget of updates larger than the warmup (100), got 100");
}

}  // namespace
}  // namespace tfm
