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
}

}  // namespace
}  // namespace tfm
