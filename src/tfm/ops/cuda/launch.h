// Launch geometry shared by the CUDA kernels, kept free of CUDA types so it can be tested on any
// machine.
#pragma once

#include <cstdint>

namespace tfm::cuda {

inline constexpr int kThreads = 256;  // threads per block of the elementwise kernels
// Grid-stride kernels never need more blocks than this to fill an H100 (132 SMs × 2048 threads
// / 256 = 1056 resident blocks) several times over; the cap also keeps grid.x in range.
inline constexpr int64_t kMaxBlocks = 8192;

// Blocks for a grid-stride loop over n items with `threads` per block (≥ 1 even for n = 0, so a
// launch is always valid).
inline int blocks_for(int64_t n, int threads = kThreads, int64_t max_blocks = kMaxBlocks) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > max_blocks) b = max_blocks;
  return static_cast<int>(b);
}

// Threads per block for one-block-per-row kernels: a power of two in [32, 1024], enough for one
// pass with up to four elements per thread.
inline int row_threads(int64_t c) {
  int t = 32;
  while (t < 1024 && static_cast<int64_t>(t) * 4 < c) t *= 2;
  return t;
}

}  // namespace tfm::cuda
