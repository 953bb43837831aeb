// Device-side accumulation for core/ (no CUDA types): dst[i] += src[i], f32, on the default stream.
#pragma once

#include <cstdint>

namespace tfm::cuda {

void add_into(float* dst, const float* src, int64_t n);

}  // namespace tfm::cuda
