#include "tfm/core/parallel.h"

#include <omp.h>

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

int get_threads() {
  return omp_get_max_threads();
}

}  // namespace tfm
