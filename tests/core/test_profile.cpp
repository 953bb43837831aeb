// The phase profile's accounting: exclusive time per phase, sealed phases, threads, counters.
// Durations are checked by relations the accounting guarantees (phases partition the time spent
// inside scopes, measured by the same clock), never against fixed timings.
#include "tfm/core/profile.h"

#include <gtest/gtest.h>

#include "tfm/autograd/grad_mode.h"
#include "tfm/core/rng.h"
#include "tfm/nn/linear.h"

#include <chrono>
#include <thread>

namespace tfm {
namespace {

using profile::Phase;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Busy for at least ms milliseconds of wall time (sleeping would work as well; spinning keeps
// the thread on the CPU as a kernel would).
void busy(int ms) {
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < end) {
  }
}

double at(const profile::Report& r, Phase p) {
  return r.seconds[static_cast<int>(p)];
}

class ProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    profile::enable(true);
    profile::reset();
  }
  void TearDown() override {
    profile::enable(false);
    profile::reset();
  }
};

TEST_F(ProfileTest, DisabledRecordsNothing) {
  profile::enable(false);
  {
    profile::Scope s(Phase::search);
    busy(5);
    profile::add_generated_tokens(7);
  }
  const profile::Report r = profile::collect();
  EXPECT_EQ(r.total(), 0.0);
  EXPECT_EQ(r.generated_tokens, 0);
}

TEST_F(ProfileTest, NestedScopesAreExclusive) {
  const auto t0 = Clock::now();
  {
    profile::Scope outer(Phase::search);
    busy(10);
    {
      profile::Scope inner(Phase::gemm);
      busy(15);
      {
        profile::Scope innermost(Phase::attention);
        busy(5);
      }
    }
    busy(10);
  }
  const double wall = seconds_since(t0);
  const profile::Report r = profile::collect();
  EXPECT_GE(at(r, Phase::search), 0.020);
  EXPECT_GE(at(r, Phase::gemm), 0.015);
  EXPECT_GE(at(r, Phase::attention), 0.005);
  // The three partition the outer scope: their sum is its duration, within the wall around it.
  EXPECT_LE(r.total(), wall);
  EXPECT_GE(r.total(), 0.040);
  // gemm's time excludes attention's: it cannot hold the outer phase's busy time.
  EXPECT_LT(at(r, Phase::gemm), wall - 0.020);
}

TEST_F(ProfileTest, SealedPhasesKeepTheirNestedTime) {
  {
    profile::Scope enc(Phase::encode);
    busy(5);
    profile::Scope gemm(Phase::gemm);  // the encoder's GEMMs count as the encoder
    busy(10);
  }
  const profile::Report r = profile::collect();
  EXPECT_GE(at(r, Phase::encode), 0.015);
  EXPECT_EQ(at(r, Phase::gemm), 0.0);
  // After the sealed scope, nesting splits again.
  {
    profile::Scope d(Phase::decoder);
    profile::Scope g(Phase::gemm);
    busy(5);
  }
  EXPECT_GE(at(profile::collect(), Phase::gemm), 0.005);
}

TEST_F(ProfileTest, EndLeavesThePhaseOnce) {
  {
    profile::Scope outer(Phase::search);
    profile::Scope part(Phase::top_k);
    busy(5);
    part.end();
    part.end();  // a second end does nothing
    busy(10);
  }
  const profile::Report r = profile::collect();
  EXPECT_GE(at(r, Phase::top_k), 0.005);
  EXPECT_LT(at(r, Phase::top_k), r.total() - 0.009);
  EXPECT_GE(at(r, Phase::search), 0.010);
}

TEST_F(ProfileTest, ThreadsAddUpIncludingFinishedOnes) {
  auto work = [] {
    profile::Scope s(Phase::gemm);
    busy(10);
  };
  std::thread a(work), b(work);
  a.join();
  b.join();  // both threads have exited: their time is kept
  EXPECT_GE(at(profile::collect(), Phase::gemm), 0.020);
  profile::reset();
  EXPECT_EQ(profile::collect().total(), 0.0);
}

TEST_F(ProfileTest, CountersAndFormat) {
  profile::add_generated_tokens(1000);
  profile::add_sentences(10);
  {
    profile::Scope l(Phase::load);
    busy(5);
  }
  const profile::Report r = profile::collect();
  EXPECT_EQ(r.generated_tokens, 1000);
  EXPECT_EQ(r.sentences, 10);
  const std::string s = profile::format(r, 2.0, 2);
  EXPECT_NE(s.find("model load"), std::string::npos) << s;
  EXPECT_NE(s.find("10 sentences, 1000 tokens"), std::string::npos) << s;
  // The command: 1000 tokens in 2 s; the search: the command less the load.
  EXPECT_NE(s.find("  500.0 tok/s (model load"), std::string::npos) << s;
  EXPECT_EQ(s.find("decoder: GEMMs"), std::string::npos) << "phases with no time are left out";
}

double flops_at(const profile::Report& r, Phase p) {
  return r.gemm_flops[static_cast<int>(p)];
}

TEST_F(ProfileTest, GemmFlopsGoToTheCurrentPhase) {
  profile::add_gemm_flops(5e9);  // outside any scope: nowhere
  {
    profile::Scope d(Phase::decoder);
    {
      profile::Scope g(Phase::gemm);
      profile::add_gemm_flops(1e9);
    }
    profile::add_gemm_flops(3e9);
  }
  {
    profile::Scope enc(Phase::encode);
    profile::Scope g(Phase::gemm);  // sealed: the encoder's layers count as the encoder
    profile::add_gemm_flops(2e9);
    busy(2);
  }
  profile::enable(false);
  {
    profile::Scope g(Phase::gemm);
    profile::add_gemm_flops(7e9);  // disabled: nothing
  }
  profile::enable(true);
  const profile::Report r = profile::collect();
  EXPECT_EQ(flops_at(r, Phase::gemm), 1e9);
  EXPECT_EQ(flops_at(r, Phase::decoder), 3e9);
  EXPECT_EQ(flops_at(r, Phase::encode), 2e9);
  double all = 0;
  for (double f : r.gemm_flops) all += f;
  EXPECT_EQ(all, 6e9);
  // The column: flops over the phase's own thread-seconds.
  const std::string s = profile::format(r, 1.0, 1);
  EXPECT_NE(s.find("GFLOP/s a thread"), std::string::npos) << s;
  char rate[64];
  std::snprintf(rate, sizeof rate, "%8.1f (0.002 TFLOP)", 2e9 / at(r, Phase::encode) * 1e-9);
  EXPECT_NE(s.find(rate), std::string::npos) << s;
  profile::reset();
  EXPECT_EQ(flops_at(profile::collect(), Phase::encode), 0.0);
  EXPECT_EQ(profile::format(profile::collect(), 1.0, 1).find("GFLOP/s"), std::string::npos);
}

// A linear layer used for inference charges 2 · rows · outputs · inputs to the phase it runs in,
// whatever path it takes; a training forward (the trainer does not profile) charges nothing.
TEST_F(ProfileTest, LinearLayersChargeTheirProducts) {
  Generator gen(3);
  nn::Linear unbound(24, 40, true, gen), bound(24, 40, false, gen);
  bound.bind(ComputeType::float32);
  const Tensor x = Tensor::full({2, 3, 24}, 0.5);  // 6 rows
  {
    NoGradGuard no_grad;
    profile::Scope d(Phase::decoder);
    unbound(x);
    bound(x.reshape({6, 24}));
  }
  EXPECT_EQ(flops_at(profile::collect(), Phase::gemm), 2 * 2.0 * 6 * 40 * 24);
  {
    profile::Scope v(Phase::vocab_projection);
    NoGradGuard no_grad;
    bound(x);
  }
  EXPECT_EQ(flops_at(profile::collect(), Phase::vocab_projection), 2.0 * 6 * 40 * 24);
  profile::reset();
  {
    profile::Scope d(Phase::decoder);
    unbound.weight_.set_requires_grad(true);
    unbound(x);
  }
  double all = 0;
  for (double f : profile::collect().gemm_flops) all += f;
  EXPECT_EQ(all, 0.0);
}

}  // namespace
}  // namespace tfm
