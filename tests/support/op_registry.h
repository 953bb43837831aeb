// The ops' one registry, in the manner of ggml's tests/test-backend-ops.cpp: every op of
// src/tfm/ops/*.h has its cases here (op_registry.cpp), and tests/ops/test_backend_ops.cpp runs
// each case through every check that applies to it: the gradient against float64 central
// differences, the same bits on 1 and 2 threads, the same bits (or the stated tolerance) at
// every CPU level, and the CPU against CUDA (skipped without a GPU).
// tests/structure/check_op_registry.py fails when an op of ops/*.h has no case. The per-op tests
// (test_<op>.cpp) stay where they check more: references from simpler ops, PyTorch fixtures, error
// messages, edge cases.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tfm/core/tensor.h"

namespace tfm::testing {

// What the CPU levels (core/cpu_isa.h) must agree on.
enum class Levels {
  bitwise,  // the same bits at every level
  close,    // equal to `tolerance` (oneDNN's GEMM splits its sums by level)
};

struct OpCase {
  std::string op;       // the function of src/tfm/ops/*.h
  std::string variant;  // what this case covers
  // The case's inputs in `dtype` (f32, or f64 for the gradient check), the same every call;
  // integer inputs (ids, masks) keep their own type.
  std::function<std::vector<Tensor>(DType dtype)> inputs;
  // The op on the inputs (in-place ops work on copies); what it returns or writes.
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> run;
  std::vector<size_t> grad;     // inputs whose gradients are checked in f64 (none: no backward)
  bool threads_bitwise = true;  // 1 and 2 threads give the same bits
  Levels levels = Levels::bitwise;
  double tolerance = 1e-5;  // scaled error allowed: CPU vs CUDA, and levels when close
  bool cuda = true;         // has a CUDA kernel (its inputs can move there)

  // Builder-style setters for the registry's table.
  OpCase& grads(std::vector<size_t> g) { return grad = std::move(g), *this; }
  OpCase& per_thread_count() { return threads_bitwise = false, *this; }
  OpCase& close_across_levels(double tol) { return levels = Levels::close, tolerance = tol, *this; }
  OpCase& tol(double t) { return tolerance = t, *this; }
  OpCase& cpu_only() { return cuda = false, *this; }
};

// Every registered case, in registry order.
const std::vector<OpCase>& op_cases();

}  // namespace tfm::testing
