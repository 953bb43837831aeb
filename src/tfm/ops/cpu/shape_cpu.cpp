#include "tfm/ops/cpu/shape_cpu.h"

#include <algorithm>
#include <cstring>

#include "tfm/core/check.h"
#include "tfm/core/parallel.h"

namespace tfm::cpu {

namespace {

constexpr int64_t kGrainBytes = 1 << 16;

template <typename U>
void gather_rows(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                 const U* src, U* out) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  if (nd == 0) {
    out[0] = src[0];
    return;
  }
  const int64_t cols = shape[nd - 1], inner = strides[nd - 1];
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < nd; ++d) rows *= shape[d];
  if (rows == 0 || cols == 0) return;
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / static_cast<int64_t>(sizeof(U)) / cols);
  parallel_for(rows, grain, [&](int64_t b, int64_t e) {
    // Odometer over the leading axes, started at row b: one division pass per task, not per row.
    std::vector<int64_t> idx(nd - 1);
    int64_t off = 0;
    for (int64_t d = nd - 2, r = b; d >= 0; --d) {
      idx[d] = r % shape[d];
      r /= shape[d];
      off += idx[d] * strides[d];
    }
    for (int64_t r = b; r < e; ++r) {
      const U* s = src + off;
      U* o = out + r * cols;
      if (inner == 1) {
        std::memcpy(o, s, sizeof(U) * cols);
      } else {
        for (int64_t c = 0; c < cols; ++c) o[c] = s[c * inner];
      }
      for (int64_t d = nd - 2; d >= 0; --d) {
        if (++idx[d] < shape[d]) {
          off += strides[d];
          break;
        }
        off -= strides[d] * (shape[d] - 1);
        idx[d] = 0;
      }
    }
  });
}

}  // namespace

void copy_blocks(int64_t outer, int64_t len, size_t es, const void* src, int64_t src_stride,
                 void* dst, int64_t dst_stride) {
  if (outer <= 0 || len <= 0) return;
  const auto* s = static_cast<const char*>(src);
  auto* d = static_cast<char*>(dst);
  const int64_t block_bytes = len * static_cast<int64_t>(es);
  if (outer == 1) {
    // One long block: split it so both threads copy.
    parallel_for(block_bytes, kGrainBytes, [&](int64_t b, int64_t e) {
      std::memcpy(d + b, s + b, static_cast<size_t>(e - b));
    });
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / block_bytes);
  parallel_for(outer, grain, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o)
      std::memcpy(d + o * dst_stride * static_cast<int64_t>(es),
                  s + o * src_stride * static_cast<int64_t>(es), static_cast<size_t>(block_bytes));
  });
}

void gather_strided(const std::vector<int64_t>& shape, const std::vector<int64_t>& src_strides,
                    size_t es, const void* src, void* out) {
  switch (es) {
    case 1:
      return gather_rows(shape, src_strides, static_cast<const uint8_t*>(src),
                         static_cast<uint8_t*>(out));
    case 2:
      return gather_rows(shape, src_strides, static_cast<const uint16_t*>(src),
                         static_cast<uint16_t*>(out));
    case 4:
      return gather_rows(shape, src_strides, static_cast<const uint32_t*>(src),
                         static_cast<uint32_t*>(out));
    case 8:
      return gather_rows(shape, src_strides, static_cast<const uint64_t*>(src),
                         static_cast<uint64_t*>(out));
    default:
      TFM_FAIL() << "gather_strided: unsupported element size " << es;
  }
}

}  // namespace tfm::cpu
