// Fully connected layer with the activation fused into the GEMM, with autograd.
#pragma once

#include <string_view>

#include "tfm/core/tensor.h"
#include "tfm/ops/activation.h"

namespace tfm {

// y = act(x·weightᵀ + bias). x (..., in); weight (out, in), PyTorch's nn.Linear layout; bias (out)
// or an undefined Tensor. Returns (..., out). All operands share one floating dtype.
//
// f32 forward: one oneDNN matmul primitive with bias and activation in its epilogue (no extra
// pass over y), or dnnl_sgemm plus one pass for at most 8 rows, where that is faster. In grad
// mode gelu (silu, gelu_tanh) runs as a separate pass so its input can be kept for the backward.
// Thread-count determinism (f32): the forward and db were bitwise the same on 1 and 2 threads in
// every shape tried. dX and dW come from dnnl_sgemm, which for GEMV-like shapes (a single row
// for dX, in or out features of 1 for dW) splits the reduction across threads, so those change
// in the last bits with the thread count. Any fixed thread count reproduces exactly. See
// test_linear.cpp.
//
// `compute` is what the GEMMs compute in: float32, or bfloat16 mixed precision (AMP): x, the
// weight and, in the backward, the output gradient are rounded to bf16 (nearest even) for the
// three GEMMs, which accumulate in f32 and return f32; bias, activation, db, the parameters,
// their gradients and everything outside the GEMMs stay f32. About twice the GEMM rate on CPUs
// with AVX512-BF16. int8 and automatic are errors here (int8 is for inference: linear_lowp).
//
// ComputeType::bfloat16 (f32 CPU tensors only): the forward keeps the bf16 copies of x and the
// weight for the backward instead of the f32 ones (half the saved memory). Error: each product
// is exact and sums in f32, so |y − y_f32| ≤ ~2⁻⁸ Σ|x||w| per output, and likewise for dX, dW.
//
// bf16 weight copies: where the weight is a parameter whose optimiser keeps its bf16 copy
// (Adam::keep_bf16_copies, core/autograd_meta.h), the forward multiplies that copy instead of
// rounding the weight again: the same bits, one conversion a step instead of one a call.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Activation act = Activation::none, ComputeType precision = ComputeType::float32);

// Attaches `copy` (bf16, of param's shape and device) to the parameter `param` as the bf16
// rounding linear() multiplies for it (core/autograd_meta.h), valid while param's data stays where
// it is now; an undefined copy detaches. The optimiser that keeps the copies calls this.
void attach_bf16_copy(const Tensor& param, const Tensor& copy);

// out = x rounded to bf16 as the bf16 GEMMs round their operands (cpu::to_bf16, to nearest even):
// x contiguous f32, out contiguous bf16 of x's size, on x's device. No autograd.
void round_to_bf16(const Tensor& x, const Tensor& out);

}  // namespace tfm
