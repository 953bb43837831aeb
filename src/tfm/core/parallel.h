// One thread pool for the whole program: OpenMP's, shared with oneDNN (built on OpenMP too).
#pragma once

#include <cstdint>

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

}  // namespace tfm
