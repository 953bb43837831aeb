// CPU kernels for pointwise activations over n contiguous elements. Input and output may alias
// (in-place application after a GEMM).
#pragma once

#include <cstdint>

namespace tfm::cpu {

template <typename T>
void relu_forward(int64_t n, const T* x, T* y);
// gx = gy where the forward output y > 0, else 0 (y suffices: y > 0 exactly when x > 0).
template <typename T>
void relu_backward(int64_t n, const T* gy, const T* y, T* gx);

// f64 uses std::erf. f32 uses the Abramowitz–Stegun 7.1.26 erfc (|error| < 1.5e-7 on Φ), the
// same approximation as oneDNN's fused gelu_erf epilogue and PyTorch's vectorised CPU GELU, with
// an inline exp so the loop vectorises.
template <typename T>
void gelu_forward(int64_t n, const T* x, T* y);
// gx = gy · (Φ(x) + x·φ(x)), x the pre-activation.
template <typename T>
void gelu_backward(int64_t n, const T* gy, const T* x, T* gx);

// The same forward maths on the calling thread only, for epilogues already split across threads.
template <typename T>
void relu_forward_serial(int64_t n, const T* x, T* y);
template <typename T>
void gelu_forward_serial(int64_t n, const T* x, T* y);

}  // namespace tfm::cpu
