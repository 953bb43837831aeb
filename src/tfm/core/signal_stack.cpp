#include "tfm/core/signal_stack.h"

#include <omp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <memory>

namespace tfm {

namespace {

// This thread's alternate stack: installed once, unless the thread already had one (CPython's
// faulthandler gives the main thread its own), and taken down when the thread ends.
class ThreadSignalStack {
 public:
  ThreadSignalStack() {
    stack_t old{};
    if (sigaltstack(nullptr, &old) == 0 && (old.ss_flags & SS_DISABLE) == 0) return;
    // Room for a handler's frame with the whole AVX-512 state (the kernel's minimum, which
    // counts it, four times over) and what the handler itself uses.
    const long minimum = sysconf(_SC_MINSIGSTKSZ);
    const size_t size =
        std::max<size_t>(size_t{64} << 10, minimum > 0 ? 4 * static_cast<size_t>(minimum) : 0);
    memory_ = std::make_unique<char[]>(size);
    stack_t ss{};
    ss.ss_sp = memory_.get();
    ss.ss_size = size;
    if (sigaltstack(&ss, nullptr) != 0) memory_.reset();  // no worse off than without one
  }
  ~ThreadSignalStack() {
    if (memory_ == nullptr) return;
    stack_t ss{};
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, nullptr);
  }
  ThreadSignalStack(const ThreadSignalStack&) = delete;
  ThreadSignalStack& operator=(const ThreadSignalStack&) = delete;

 private:
  std::unique_ptr<char[]> memory_;
};

void ensure_this_thread() {
  thread_local ThreadSignalStack stack;
  (void)stack;
}

}  // namespace

void ensure_signal_stacks() {
  // The largest team this thread has given stacks to: libgomp keeps a thread's team workers
  // between regions, so a team no larger than that is covered.
  thread_local int team_covered = 0;
  if (team_covered == 0) {
    ensure_this_thread();
    team_covered = 1;
  }
  if (omp_in_parallel()) return;  // oneDNN then runs on this thread alone
  const int team = omp_get_max_threads();
  if (team <= team_covered) return;
#pragma omp parallel num_threads(team)
  ensure_this_thread();
  team_covered = team;
}

}  // namespace tfm
