// parallel_items: every item runs exactly once on some thread, uneven items are handed out one at
// a time, an exception is rethrown after every item ran (the lowest item's), and inside a
// parallel region everything runs on the calling thread.
#include "tfm/core/parallel.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <string>

#include "tfm/core/check.h"

namespace tfm {
namespace {

TEST(ParallelItems, EveryItemOnceWithDynamicHandOut) {
  for (int threads : {1, 2, 4}) {
    const int64_t n = 37;
    std::vector<std::atomic<int>> runs(n);
    std::vector<int> thread_of(n, -1);
    parallel_items(n, threads, [&](int64_t i) {
      runs[static_cast<size_t>(i)]++;
      thread_of[static_cast<size_t>(i)] = omp_get_thread_num();
    });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(runs[static_cast<size_t>(i)].load(), 1) << i;
    std::set<int> used(thread_of.begin(), thread_of.end());
    EXPECT_LE(static_cast<int>(used.size()), threads);
    EXPECT_GE(*used.begin(), 0);
  }
  parallel_items(0, 2, [](int64_t) { FAIL() << "no items, no calls"; });
}

TEST(ParallelItems, RethrowsTheLowestItemsErrorAfterAllRan) {
  std::atomic<int> ran{0};
  try {
    parallel_items(10, 2, [&](int64_t i) {
      ran++;
      if (i == 7) throw std::runtime_error("item 7");
      if (i == 3) TFM_FAIL() << "item 3";
    });
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("item 3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ran.load(), 10);
}

TEST(ParallelItems, InsideAParallelRegionRunsOnTheCallingThread) {
  int outer_threads = 0;
  std::vector<int> thread_of(8, -1);
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    {
      outer_threads = omp_get_num_threads();
      const int me = omp_get_thread_num();
      parallel_items(8, 2,
                     [&](int64_t i) { thread_of[static_cast<size_t>(i)] = omp_get_thread_num(); });
      for (int t : thread_of) EXPECT_EQ(t, me);
    }
  }
  EXPECT_GE(outer_threads, 1);
}

}  // namespace
}  // namespace tfm
