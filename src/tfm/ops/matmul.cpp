#include "tfm/ops/matmul.h"

#include <algorithm>

#include "tfm/autograd/tape.h"
#include "tfm/ops/cpu/primitives.h"
#include "tfm/ops/dispatch.h"
#ifdef TFM_WITH_CUDA
#include "tfm/ops/cuda/gemm.h"
#endif

namespace tfm {

namespace {

const char* trans_note(bool t) {
  return t ? " (transposed)" : "";
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in, bool trans_a, bool trans_b) {
  Tensor a = check_float_input(a_in, "matmul", "a");
  Tensor b = check_float_input(b_in, "matmul", "b");
  check_same_dtype(a, b, "matmul");
  check_same_device(a, b, "matmul");
  TFM_CHECK(a.dim() >= 2 && b.dim() >= 2)
      << "matmul: operands must have at least 2 dimensions, got a " << a.describe() << " and b "
      << b.describe();
  const Shape batch_a(a.shape().begin(), a.shape().end() - 2);
  const Shape batch_b(b.shape().begin(), b.shape().end() - 2);
  TFM_CHECK(batch_a == batch_b) << "matmul: batch dimensions differ, a " << a.describe() << " vs b "
                                << b.describe() << " (no broadcasting)";
  const int64_t m = trans_a ? a.size(-1) : a.size(-2);
  const int64_t k = trans_a ? a.size(-2) : a.size(-1);
  const int64_t kb = trans_b ? b.size(-1) : b.size(-2);
  const int64_t n = trans_b ? b.size(-2) : b.size(-1);
  TFM_CHECK(k == kb) << "matmul: inner dimensions differ, a " << a.describe() << trans_note(trans_a)
                     << " has K=" << k << ", b " << b.describe() << trans_note(trans_b)
                     << " has K=" << kb;

  Shape out_shape = batch_a;
  out_shape.push_back(m);
  out_shape.push_back(n);
  const int64_t batch = shape_numel(batch_a);
  Tensor c = k > 0 ? Tensor::empty(out_shape, a.dtype(), a.device())
                   : Tensor::zeros(out_shape, a.dtype(), a.device());
  if (c.numel() > 0 && k > 0) {
    // Row strides of the stored matrices; a 0 column count still needs a legal stride of 1.
    const int64_t lda = std::max<int64_t>(a.size(-1), 1), ldb = std::max<int64_t>(b.size(-1), 1);
    if (on_cuda(a)) {
#ifdef TFM_WITH_CUDA
      // One cuBLASLt call a matrix of the batch (the batches above ops are a handful).
      for (int64_t i = 0; i < batch; ++i)
        cuda::gemm(trans_a, trans_b, m, n, k, 1.f, a.data<float>() + i * m * k, lda,
                   b.data<float>() + i * k * n, ldb, 0.f, c.data<float>() + i * m * n, n);
#endif
    } else {
      dispatch_floating(a.dtype(), "matmul", [&](auto tag) {
        using T = decltype(tag);
        cpu::gemm_batched<T>(trans_a, trans_b, batch, m, n, k, T(1), a.data<T>(), lda, m * k,
                             b.data<T>(), ldb, k * n, T(0), c.data<T>(), n, m * n);
      });
    }
  }
  if (autograd::needs_grad({&a_in, &b_in})) {
    // Each gradient is itself a matmul of the incoming gradient gc (..., M, N) with the other
    // operand, transposed so that it lands in the stored layout of a or b.
    Tensor saved_a = b_in.requires_grad() ? a.detach() : Tensor();
    Tensor saved_b = a_in.requires_grad() ? b.detach() : Tensor();
    autograd::record("matmul", {&a_in, &b_in}, {&c},
                     [saved_a, saved_b, trans_a, trans_b](const autograd::Grads& g,
                                                          const autograd::Needs& needs) {
                       const Tensor& gc = g[0];
                       Tensor ga, gb;
                       if (needs[0]) {
                         if (!trans_a)
                           ga = matmul(gc, saved_b, false, !trans_b);  // (M, K) = gc·op(b)ᵀ
                         else
                           ga = matmul(saved_b, gc, trans_b, true);  // (K, M) = op(b)·gcᵀ
                       }
                       if (needs[1]) {
                         if (!trans_b)
                           gb = matmul(saved_a, gc, !trans_a, false);  // (K, N) = op(a)ᵀ·gc
                         else
                           gb = matmul(gc, saved_a, true, trans_a);  // (N, K) = gcᵀ·op(a)
                       }
                       return autograd::Grads{ga, gb};
                     });
  }
  return c;
}

}  // namespace tfm
