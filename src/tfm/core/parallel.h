// One thread pool for the whole program: OpenMP's, shared with oneDNN (built on OpenMP too).
#pragma once

#include <omp.h>

#include <cstdint>
#include <exception>
#include <vector>

#include "tfm/core/profile.h"

namespace tfm {

// Sets the number of threads every op (and oneDNN) uses. n <= 0 means all cores.
void set_threads(int n);
int get_threads();
// A user's thread count (`flag` names it in the message): 0 (all cores) up to the hardware
// threads this process may use; more would only slow every barrier down, so it is refused.
void check_thread_count(const char* flag, int64_t n);

// Runs f(begin, end) over [0, n) in chunks of at least `grain` items, in parallel when the work
// is large enough. Chunk boundaries depend only on n, grain and the thread count.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int64_t chunks = (n + grain - 1) / grain;
  if (chunks <= 1 || get_threads() == 1) {
    f(int64_t{0}, n);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t b = c * grain;
    const int64_t e = b + grain < n ? b + grain : n;
    f(b, e);
  }
}

// Runs f(i) for every i in [0, n) on up to `threads` threads, each item on one thread, handed
// out one at a time (uneven items: a search's shards); ops inside an item run on its thread
// alone (nested regions get one thread). On the calling thread alone when threads <= 1 or
// inside a parallel region. Every item runs even if one throws; the lowest item's exception is
// rethrown. A thread out of items waits in the profile's `wait` phase, so imbalance shows.
template <typename F>
void parallel_items(int64_t n, int threads, F&& f) {
  if (n <= 0) return;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  auto one = [&](int64_t i) {
    try {
      f(i);
    } catch (...) {
      errors[static_cast<size_t>(i)] = std::current_exception();
    }
  };
  if (threads > n) threads = static_cast<int>(n);
  if (threads <= 1 || omp_in_parallel()) {
    for (int64_t i = 0; i < n; ++i) one(i);
  } else {
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(dynamic, 1) nowait
      for (int64_t i = 0; i < n; ++i) one(i);
      profile::Scope idle(profile::Phase::wait);
#pragma omp barrier
    }
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace tfm
