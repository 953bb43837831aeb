#include "tfm/core/parallel.h"

#include <omp.h>

#include "tfm/core/check.h"

namespace tfm {

namespace {
// Ops parallelise at one level only: an op called inside another's parallel region (a GEMM per
// thread in a batched GEMM) must run on its caller's thread, not spawn a team of its own.
const bool g_single_level = [] {
  omp_set_max_active_levels(1);
  return true;
}();
}  // namespace

void set_threads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  omp_set_max_active_levels(1);
  omp_set_num_threads(n);
}

void check_thread_count(const char* flag, int64_t n) {
  const int64_t hw = omp_get_num_procs();
  TFM_CHECK_ARG(n >= 0) << flag << " must be at least 0 (got " << n << "; 0: all cores)";
  TFM_CHECK_ARG(n <= hw) << flag << " " << n << " is more than the " << hw
                         << " hardware threads this process may use (0: all of them)";
}

int get_threads() {
  return omp_get_max_threads();
}

}  // namespace tfm
