// CPU kernels for sums. Every sum is accumulated in double in an order fixed by the sizes alone,
// so results are bitwise identical for any thread count.
#pragma once

#include <cstdint>

namespace tfm::cpu {

// Sum of x[0..n), in double.
template <typename T>
double sum_all(int64_t n, const T* x);
// out[r] = sum over c of x[r * cols + c], for r < rows.    x (rows, cols) → out (rows)
template <typename T>
void sum_rows(int64_t rows, int64_t cols, const T* x, T* out);
// out[r * cols + c] = s * g[r]: the gradient of sum_rows (and, with rows = 1, of sum_all).
template <typename T>
void broadcast_rows(int64_t rows, int64_t cols, const T* g, T s, T* out);

}  // namespace tfm::cpu
