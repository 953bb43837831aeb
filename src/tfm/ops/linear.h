// Fully connected layer with the activation fused into the GEMM, with autograd.
#pragma once

#include "tfm/core/tensor.h"
#include "tfm/ops/activation.h"

namespace tfm {

// y = act(x·weightᵀ + bias). x (..., in); weight (out, in), PyTorch's nn.Linear layout; bias (out)
// or an undefined Tensor. Returns (..., out). All operands share one floating dtype.
//
// f32 forward: one oneDNN matmul primitive with bias and activation in its epilogue (no extra
// pass over y), or dnnl_sgemm plus one pass for at most 8 rows, where that is faster. In grad
// mode gelu runs as a separate pass so its input can be kept for the backward.
// Thread-count determinism (f32): the forward and db were bitwise the same on 1 and 2 threads in
// every shape tried. dX and dW come from dnnl_sgemm, which for GEMV-like shapes (a single row
// for dX, in or out features of 1 for dW) splits the reduction across threads, so those change
// in the last bits with the thread count. Any fixed thread count reproduces exactly. See
// test_linear.cpp.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Activation act = Activation::none);

}  // namespace tfm
