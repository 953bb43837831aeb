// CPU kernels for pointwise activations over n contiguous elements. Input and output may alias
// (in-place application after a GEMM).
#pragma once

#include <cstdint>

#include "tfm/types.h"

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

// SiLU x·σ(x), σ(x) = 1 / (1 + e^-x) (f32 with simd_exp.h's exp, as PyTorch's vectorised SiLU
// takes its own); gx = gy·σ(x)·(1 + x·(1 - σ(x))).
template <typename T>
void silu_forward(int64_t n, const T* x, T* y);
template <typename T>
void silu_backward(int64_t n, const T* gy, const T* x, T* gx);

// The tanh GELU, 0.5·x·(1 + tanh(u)), u = √(2/π)·(x + 0.044715·x³) (f32: tanh(u) as
// 1 - 2/(e^{2u} + 1) with simd_exp.h's exp); gx = gy·(0.5·(1 + t) + 0.5·x·(1 - t²)·u'(x)).
template <typename T>
void gelu_tanh_forward(int64_t n, const T* x, T* y);
template <typename T>
void gelu_tanh_backward(int64_t n, const T* gy, const T* x, T* gx);

// The same forward maths on the calling thread only, for epilogues already split across threads.
template <typename T>
void relu_forward_serial(int64_t n, const T* x, T* y);
template <typename T>
void gelu_forward_serial(int64_t n, const T* x, T* y);
template <typename T>
void silu_forward_serial(int64_t n, const T* x, T* y);
template <typename T>
void gelu_tanh_forward_serial(int64_t n, const T* x, T* y);

// An activation whose derivative needs its input (gelu, silu, gelu_tanh): a GEMM applies it as a
// pass after its epilogue, and training keeps the pre-activation for the backward.
inline bool activation_needs_input(Activation act) {
  return act == Activation::gelu || act == Activation::silu || act == Activation::gelu_tanh;
}
// Applies such an activation on the calling thread (nothing for none/relu, which the GEMM
// epilogues apply themselves); x and y may alias.
template <typename T>
void input_activation_serial(Activation act, int64_t n, const T* x, T* y);
// The same over threads, and the backward gx = gy·act'(x).
template <typename T>
void input_activation_forward(Activation act, int64_t n, const T* x, T* y);
template <typename T>
void input_activation_backward(Activation act, int64_t n, const T* gy, const T* x, T* gx);

}  // namespace tfm::cpu
