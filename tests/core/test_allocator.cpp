#include <cstdint>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include <unistd.h>

#include "support/test_util.h"
#include "tfm/core/allocator.h"

namespace tfm {
namespace {

bool aligned64(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 64 == 0;
}

TEST(Allocator, BlocksAre64ByteAligned) {
  CpuCachingAllocator a;
  std::vector<std::shared_ptr<void>> live;
  for (size_t bytes : {0ul, 1ul, 3ul, 63ul, 64ul, 65ul, 1000ul, 4095ul, 4097ul, 12345ul, 1ul << 20})
    live.push_back(a.allocate(bytes));
  for (auto& p : live) EXPECT_TRUE(aligned64(p.get())) << p.get();
  // Reused blocks stay aligned, and tensors built on the process allocator are too.
  live.clear();
  EXPECT_TRUE(aligned64(a.allocate(65).get()));
  for (int64_t n : {1, 7, 1000, 100003}) {
    EXPECT_TRUE(aligned64(Tensor::empty({n}).raw_data()));
    EXPECT_TRUE(aligned64(Tensor::empty({n}, DType::f64).raw_data()));
  }
}

TEST(Allocator, SizeClassesWasteAtMostAnEighthAbove4KiB) {
  auto check = [](size_t b) {
    const size_t c = CpuCachingAllocator::size_class(b);
    EXPECT_GE(c, b);
    EXPECT_EQ(c % 64, 0u) << b;
    if (b > 4096) {
      EXPECT_LE(c - b, b / 8) << "bytes " << b << " class " << c;
    } else {
      EXPECT_LT(c - b, 64u) << "bytes " << b << " class " << c;
    }
  };
  for (size_t b = 1; b <= 70000; ++b) check(b);
  for (size_t p = 13; p < 40; ++p)
    for (long d : {-65l, -1l, 0l, 1l, 65l, 12345l}) check((size_t{1} << p) + d);
  // Classes are coarse enough to share blocks: nearby sizes land in the same class.
  EXPECT_EQ(CpuCachingAllocator::size_class(5000), CpuCachingAllocator::size_class(5100));
  EXPECT_EQ(CpuCachingAllocator::size_class(1), 64u);
  EXPECT_EQ(CpuCachingAllocator::size_class(0), 64u);
}

TEST(Allocator, SteadyStateLoopReusesFreedBlocks) {
  CpuCachingAllocator a;
  const std::vector<size_t> sizes = {100, 4096, 5000, 70000, 1 << 20, 3 << 20};
  auto step = [&] {
    // Like a training step: several live at once, all freed at the end.
    std::vector<std::shared_ptr<void>> live;
    for (size_t s : sizes) live.push_back(a.allocate(s));
    for (size_t s : sizes) live.push_back(a.allocate(s + 7));  // same class, second block
  };
  step();
  const uint64_t warm = a.stats().system_allocs;
  EXPECT_EQ(warm, 2 * sizes.size());
  for (int i = 0; i < 50; ++i) step();
  const AllocatorStats s = a.stats();
  EXPECT_EQ(s.system_allocs, warm) << "steady state reached the system allocator";
  EXPECT_EQ(s.requests, 51 * 2 * sizes.size());
  EXPECT_EQ(s.in_use_bytes, 0u);
}

TEST(Allocator, FreedBlockIsHandedOutAgain) {
  CpuCachingAllocator a;
  void* first = a.allocate(5000).get();  // freed at the end of the statement
  auto again = a.allocate(5100);         // same size class
  EXPECT_EQ(again.get(), first);
  EXPECT_EQ(a.stats().system_allocs, 1u);
  auto other = a.allocate(9000);  // different class: a new block
  EXPECT_NE(other.get(), first);
  EXPECT_EQ(a.stats().system_allocs, 2u);
}

TEST(Allocator, AMissTakesACachedBlockAtMostAQuarterLarger) {
  CpuCachingAllocator a;
  const size_t big = CpuCachingAllocator::size_class(100000);
  void* first = a.allocate(100000).get();  // freed at once
  const size_t near = 90000;               // another class, within 25 % below `big`
  ASSERT_NE(CpuCachingAllocator::size_class(near), big);
  ASSERT_LE(big, CpuCachingAllocator::size_class(near) * 5 / 4);
  {
    auto again = a.allocate(near);
    EXPECT_EQ(again.get(), first);
    EXPECT_EQ(a.stats().system_allocs, 1u);
    EXPECT_EQ(a.stats().in_use_bytes, big);  // accounted at the block's own class
  }
  EXPECT_EQ(a.stats().cached_bytes, big);
  auto small = a.allocate(60000);  // `big` would waste more than a quarter: a new block
  EXPECT_NE(small.get(), first);
  EXPECT_EQ(a.stats().system_allocs, 2u);
}

TEST(Allocator, StatsAreConsistent) {
  CpuCachingAllocator a;
  const size_t c1 = CpuCachingAllocator::size_class(1000);
  const size_t c2 = CpuCachingAllocator::size_class(50000);
  auto p1 = a.allocate(1000);
  auto p2 = a.allocate(50000);
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.in_use_bytes, c1 + c2);
  EXPECT_EQ(s.peak_in_use_bytes, c1 + c2);
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.requests, 2u);

  p2.reset();
  s = a.stats();
  EXPECT_EQ(s.in_use_bytes, c1);
  EXPECT_EQ(s.cached_bytes, c2);
  EXPECT_EQ(s.peak_in_use_bytes, c1 + c2);  // peak remembers

  a.reset_peak();
  EXPECT_EQ(a.stats().peak_in_use_bytes, c1);

  auto p3 = a.allocate(50000);  // from the cache
  s = a.stats();
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.in_use_bytes, c1 + c2);
  EXPECT_EQ(s.system_allocs, 2u);

  p1.reset();
  p3.reset();
  s = a.stats();
  EXPECT_EQ(s.in_use_bytes, 0u);
  EXPECT_EQ(s.cached_bytes, c1 + c2);
}

TEST(Allocator, EmptyCacheReturnsEverythingCached) {
  CpuCachingAllocator a;
  auto keep = a.allocate(2000);
  { auto tmp = a.allocate(100000); }
  ASSERT_GT(a.stats().cached_bytes, 0u);
  a.empty_cache();
  AllocatorStats s = a.stats();
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.in_use_bytes, CpuCachingAllocator::size_class(2000));  // live blocks untouched
  auto again = a.allocate(100000);  // the cache is empty: back to the system
  EXPECT_EQ(a.stats().system_allocs, 3u);
}

TEST(Allocator, CacheIsTrimmedWhenMissesFindItOverItsLimit) {
  CpuCachingAllocator a;
  a.set_cache_limit(1 << 20);
  EXPECT_EQ(a.cache_limit(), size_t{1} << 20);
  // Blocks of ever new sizes, each freed at once: without a limit the cache would hold them all.
  size_t freed = 0;
  for (size_t i = 0; i < 64; ++i) {
    const size_t bytes = (size_t{64} << 10) + i * 8192;  // 64 KiB + a new class each time
    a.allocate(bytes);
    freed += CpuCachingAllocator::size_class(bytes);
    EXPECT_LE(a.stats().cached_bytes, (size_t{1} << 20) + CpuCachingAllocator::size_class(bytes));
  }
  EXPECT_GT(freed, size_t{4} << 20);
  EXPECT_GT(a.stats().trims, 0u);
  // A steady loop over one size never misses, so it never trims.
  a.allocate(100000);  // the loop's first request may miss (and trim)
  const uint64_t trims = a.stats().trims, allocs = a.stats().system_allocs;
  for (int i = 0; i < 100; ++i) a.allocate(100000);
  EXPECT_EQ(a.stats().trims, trims);
  EXPECT_EQ(a.stats().system_allocs, allocs);
}

TEST(Allocator, DefaultCacheLimitFollowsPeakUse) {
  CpuCachingAllocator a;
  EXPECT_EQ(a.cache_limit(), size_t{256} << 20);
  {
    auto big = a.allocate(size_t{300} << 20);
    EXPECT_GE(a.cache_limit(), size_t{300} << 20);
  }
}

// A decoding process: after mark_resident the tensors' memory, in use and cached, stays within
// the peak in use since the mark plus a sixteenth of the working set, whatever sizes come and go;
// a request takes a cached block up to twice its size; an explicit limit replaces the rule.
TEST(Allocator, DecodingKeepsTheTensorsWithinTheirPeak) {
  CpuCachingAllocator a;
  auto weights = a.allocate(size_t{300} << 20);   // mapped, never touched
  EXPECT_GE(a.cache_limit(), size_t{300} << 20);  // the training rule: the peak in use
  a.mark_resident();
  const size_t resident = a.stats().in_use_bytes;
  EXPECT_EQ(a.cache_limit(), 0u);  // nothing in use beyond the weights yet: no room
  const size_t step = size_t{40} << 20;
  { auto s = a.allocate(step); }  // a step's tensors, freed at once
  const size_t peak = resident + CpuCachingAllocator::size_class(step);
  const size_t bound = peak + CpuCachingAllocator::size_class(step) / 16;
  EXPECT_EQ(a.cache_limit(), bound - resident);
  // Blocks of ever new sizes, a few held at once: in use and cached never pass the bound of the
  // peak so far (the peak since the mark: the weights were allocated first).
  std::vector<std::shared_ptr<void>> held;
  size_t freed = 0;
  for (size_t i = 0; i < 64; ++i) {
    const size_t bytes = (size_t{1} << 20) + i * (size_t{300} << 10);
    held.push_back(a.allocate(bytes));
    if (held.size() > 3) held.erase(held.begin()), freed += bytes;
    const AllocatorStats s = a.stats();
    EXPECT_LE(s.in_use_bytes + s.cached_bytes,
              s.peak_in_use_bytes + (s.peak_in_use_bytes - resident) / 16)
        << i;
  }
  EXPECT_GT(a.stats().trims, 0u);
  EXPECT_GT(freed, a.stats().peak_in_use_bytes - resident);  // more came and went than it holds
  held.clear();
  // A request half the size of the only cached block takes it; a third of it does not.
  a.empty_cache();
  { auto b = a.allocate(size_t{4} << 20); }
  const uint64_t allocs = a.stats().system_allocs;
  { auto b = a.allocate(size_t{2} << 20); }
  EXPECT_EQ(a.stats().system_allocs, allocs);
  { auto b = a.allocate(size_t{1} << 20); }
  EXPECT_EQ(a.stats().system_allocs, allocs + 1);
  a.set_cache_limit(size_t{1} << 20);
  EXPECT_EQ(a.cache_limit(), size_t{1} << 20);
}

// Statm's resident pages of this process, in bytes.
size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Blocks given back go back to the system, even where glibc's malloc would keep them: once a
// 4 MiB block has been freed, glibc serves blocks up to 4 MiB from its heap, and heap memory below
// a live block stays resident after free.
TEST(Allocator, BlocksGivenBackLeaveTheProcess) {
  CpuCachingAllocator a;
  { auto big = a.allocate(size_t{4} << 20); }
  a.empty_cache();
  std::vector<std::shared_ptr<void>> blocks;
  for (int i = 0; i < 16; ++i) {
    blocks.push_back(a.allocate(size_t{2} << 20));
    std::memset(blocks.back().get(), 1, size_t{2} << 20);
  }
  auto above = a.allocate(CpuCachingAllocator::kMapBytes);  // a live block after them
  std::memset(above.get(), 1, CpuCachingAllocator::kMapBytes);
  const size_t before = resident_bytes();
  blocks.clear();
  a.empty_cache();
  EXPECT_GT(before, resident_bytes() + (size_t{24} << 20));  // of the 32 MiB freed
}

TEST(Allocator, ConcurrentUseKeepsStatsConsistent) {
  CpuCachingAllocator a;
  auto work = [&] {
    for (int i = 0; i < 2000; ++i) {
      auto p = a.allocate(64 * (1 + i % 17));
      auto q = a.allocate(5000 + i % 3);
      static_cast<char*>(p.get())[0] = 1;
    }
  };
  std::thread t1(work), t2(work);
  t1.join();
  t2.join();
  const AllocatorStats s = a.stats();
  EXPECT_EQ(s.in_use_bytes, 0u);
  EXPECT_EQ(s.requests, 8000u);
  EXPECT_LE(s.system_allocs, 2u * 18u);  // at most one block per class per thread
  EXPECT_GT(s.cached_bytes, 0u);
}

TEST(Allocator, DeviceSeam) {
  EXPECT_EQ(&allocator_for(Device::cpu), &cpu_allocator());
  EXPECT_EQ(cpu_allocator().device(), Device::cpu);
}

TEST(Allocator, TensorsUseTheProcessAllocator) {
  CpuCachingAllocator& a = cpu_allocator();
  const AllocatorStats before = a.stats();
  {
    Tensor t = Tensor::empty({1000}, DType::f64);
    EXPECT_EQ(a.stats().in_use_bytes, before.in_use_bytes + CpuCachingAllocator::size_class(8000));
  }
  EXPECT_EQ(a.stats().in_use_bytes, before.in_use_bytes);
}

}  // namespace
}  // namespace tfm
