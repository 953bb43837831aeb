// Signals that arrive while oneDNN computes must not corrupt memory. oneDNN 2.x's JIT GEMM
// kernels (f32 and int8) point rsp at a heap workspace while they run (oneDNN issue 4845, fixed
// upstream after the 2.6 that Debian ships); a handler whose frame the kernel pushes there writes
// over the heap. tfm gives every thread that runs oneDNN an alternate signal stack
// (core/signal_stack.h), which a handler installed with SA_ONSTACK runs on: tfm's own (tfm
// train's SIGTERM) and Python's. Found as a rare glibc abort in train_cli's SIGTERM case.
//
// Here: a thread sends the process SIGUSR1 every few microseconds while the GEMM entry points
// run, with a handler that uses its stack; each product must equal the one computed in peace,
// and the heap must stay whole (glibc aborts the test on a corrupted chunk).
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "tfm/core/cpu_isa.h"
#include "tfm/core/parallel.h"
#include "tfm/ops/cpu/primitives.h"

namespace {

std::atomic<long> g_handled{0};

extern "C" void on_usr1(int) {
  // Touch some of the stack the frame sits on, as a real handler would.
  volatile char scratch[512];
  for (size_t i = 0; i < sizeof scratch; i += 64) scratch[i] = static_cast<char>(i);
  g_handled.fetch_add(1, std::memory_order_relaxed);
}

// SIGUSR1 to the whole process (the kernel picks a thread that does not block it: the caller or
// an OpenMP worker) until `stop`, from a thread that blocks it itself.
class SignalStorm {
 public:
  SignalStorm() {
    struct sigaction sa {};
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_ONSTACK | SA_RESTART;
    sigaction(SIGUSR1, &sa, &old_);
    thread_ = std::thread([this] {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGUSR1);
      pthread_sigmask(SIG_BLOCK, &set, nullptr);
      while (!stop_.load()) {
        kill(getpid(), SIGUSR1);
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
  }
  ~SignalStorm() {
    stop_ = true;
    thread_.join();
    sigaction(SIGUSR1, &old_, nullptr);
  }

 private:
  struct sigaction old_ {};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(gen);
  return v;
}

// Runs `product` (which fills its output) once in peace, then under the storm for at least
// `rounds` rounds and until 1000 signals have been handled (10 s at most); every stormy result must
// be the peaceful one bit for bit.
template <class T, class F>
void expect_unchanged_under_signals(size_t out_size, int rounds, F product) {
  constexpr long kSignals = 1000;
  std::vector<T> want(out_size);
  product(want.data());
  const long before = g_handled.load();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  {
    SignalStorm storm;
    for (int r = 0; r < rounds || (g_handled.load() - before < kSignals &&
                                   std::chrono::steady_clock::now() < deadline);
         ++r) {
      std::vector<T> got(out_size, T{});
      product(got.data());
      ASSERT_EQ(std::memcmp(got.data(), want.data(), out_size * sizeof(T)), 0) << "round " << r;
      // Allocations between products: glibc checks the chunks around what a frame overwrote.
      std::vector<std::vector<char>> churn;
      for (int i = 0; i < 16; ++i) churn.emplace_back(1000 + 4096 * i, char(i));
    }
  }
  // Enough signals arrived during the products for the test to mean something.
  EXPECT_GE(g_handled.load() - before, kSignals);
}

TEST(GemmSignals, SgemmUnderASignalStorm) {
  for (int threads : {1, 2}) {
    tfm::set_threads(threads);
    const int64_t m = 96, n = 384, k = 512;
    const auto a = random_floats(m * k, 1), b = random_floats(k * n, 2);
    expect_unchanged_under_signals<float>(m * n, 200, [&](float* c) {
      tfm::cpu::gemm<float>(false, true, m, n, k, 1.f, a.data(), k, b.data(), k, 0.f, c, n);
    });
  }
}

TEST(GemmSignals, MatmulPrimitiveUnderASignalStorm) {
  tfm::set_threads(2);
  const int64_t m = 64, n = 512, k = 256;
  const auto x = random_floats(m * k, 3), w = random_floats(n * k, 4), bias = random_floats(n, 5);
  expect_unchanged_under_signals<float>(m * n, 200, [&](float* y) {
    tfm::cpu::matmul_primitive_f32(m, n, k, x.data(), w.data(), bias.data(), tfm::Activation::none,
                                   y);
  });
}

TEST(GemmSignals, Int8MatmulUnderASignalStorm) {
  // Below VNNI, int8 runs tfm's own kernel (packed_int8_cpu.h), not oneDNN's.
  if (!tfm::cpu_has_vnni()) GTEST_SKIP() << "oneDNN's int8 matmul needs VNNI";
  tfm::set_threads(2);
  const int64_t m = 64, n = 512, k = 256;
  std::mt19937 gen(6);
  std::vector<int8_t> q(n * k);
  std::vector<uint8_t> x(m * k);
  for (auto& v : q) v = static_cast<int8_t>(static_cast<int>(gen() % 255) - 127);
  for (auto& v : x) v = static_cast<uint8_t>(gen() % 256);
  const auto packed = tfm::cpu::pack_s8_matmul_weights(n, k, q.data());
  expect_unchanged_under_signals<int32_t>(
      m * n, 200, [&](int32_t* acc) { tfm::cpu::matmul_primitive_u8s8(m, x.data(), packed, acc); });
}

}  // namespace
