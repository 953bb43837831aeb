#include "tfm/ops/cpu/index_cpu.h"

#include <cstring>

namespace tfm::cpu {

void copy_rows(int64_t rows, size_t bytes, const void* src, int64_t src_stride,
               const int64_t* index, void* dst, int64_t dst_stride) {
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t from = index ? index[i] : i;
    std::memcpy(d + i * dst_stride, s + from * src_stride, bytes);
  }
}

void pick_columns(int64_t rows, int64_t v, const float* x, const int32_t* cols, float* out) {
  for (int64_t r = 0; r < rows; ++r) out[r] = x[r * v + cols[r]];
}

}  // namespace tfm::cpu
