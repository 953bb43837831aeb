// CUDA kernels for elementwise arithmetic and activations over n contiguous f32 elements: the
// device counterparts of ops/cpu/elementwise_cpu.h and activation_cpu.h, same semantics.
// Pointers are device memory; inputs and outputs may alias; work is queued on `stream`.
#pragma once

#include <cstdint>

#include "tfm/core/cuda/runtime.h"
#include "tfm/types.h"

namespace tfm::cuda {

void axpby(int64_t n, float alpha, const float* x, float beta, const float* y, float* out,
           const Stream& stream = default_stream());  // out = αx + βy
void mul(int64_t n, const float* a, const float* b, float* out,
         const Stream& stream = default_stream());
void scale(int64_t n, float s, const float* x, float* out, const Stream& stream = default_stream());
void divide(int64_t n, float d, const float* x, float* out,
            const Stream& stream = default_stream());  // out = x / d, correctly rounded

// relu keeps NaN (x < 0 ? 0 : x); its backward passes gy where the output y > 0.
void relu_forward(int64_t n, const float* x, float* y, const Stream& stream = default_stream());
void relu_backward(int64_t n, const float* gy, const float* y, float* gx,
                   const Stream& stream = default_stream());
// Exact (erf) GELU, x·Φ(x), with CUDA's normcdff; gx = gy·(Φ(x) + x·φ(x)).
void gelu_forward(int64_t n, const float* x, float* y, const Stream& stream = default_stream());
void gelu_backward(int64_t n, const float* gy, const float* x, float* gx,
                   const Stream& stream = default_stream());
// gelu, silu (x·σ(x)) or gelu_tanh (GPT-2's gelu_new) as cpu::input_activation_forward /
// input_activation_backward say; none and relu do nothing here (the GEMM epilogue has them).
void input_activation_forward(Activation act, int64_t n, const float* x, float* y,
                              const Stream& stream = default_stream());
void input_activation_backward(Activation act, int64_t n, const float* gy, const float* x,
                               float* gx, const Stream& stream = default_stream());

// bf16 bit patterns of x, rounded to nearest even, a NaN kept a quiet NaN: bitwise cpu::to_bf16.
void float_to_bf16(int64_t n, const float* x, uint16_t* y, const Stream& stream = default_stream());

// out (N) = Σ_i a (M, N)[i, :] in double, rounded once (the bias gradient of a linear layer, as
// cpu::column_sums, which sums the rows in order): by fixed 64-row chunks, then the chunks in a
// fixed order, so a tall batch is read by many blocks and the bits do not change run to run.
void column_sums(int64_t m, int64_t n, const float* a, float* out,
                 const Stream& stream = default_stream());

}  // namespace tfm::cuda
