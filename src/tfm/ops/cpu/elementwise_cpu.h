// CPU kernels for elementwise arithmetic over n contiguous elements.
#pragma once

#include <cstdint>

namespace tfm::cpu {

template <typename T>
void axpby(int64_t n, T alpha, const T* x, T beta, const T* y, T* out);  // out = fma(α, x, βy)
template <typename T>
void mul(int64_t n, const T* a, const T* b, T* out);
template <typename T>
void scale(int64_t n, T s, const T* x, T* out);

}  // namespace tfm::cpu
