// Shared test helpers: random tensors, closeness checks, and the float64 finite-difference
// gradient check every op's tests use.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tfm/core/parallel.h"
#include "tfm/core/tensor.h"
#include "tfm/ops/activation.h"

namespace tfm::testing {

// Uniform values in [lo, hi), reproducible from seed.
Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, double lo = -1.0,
                     double hi = 1.0);
// Random integer ids in [0, n).
Tensor random_ids(const Shape& shape, int64_t n, uint64_t seed);

// References written apart from the library's code, for the precision tests.
// bf16 of f: round to nearest even on the f32 bit pattern (NaN not handled).
float round_bf16(float f);
// act(z) by its definition in double (gelu through std::erfc, silu and gelu_tanh through
// std::exp and std::tanh).
double activate(double z, Activation act);

// Largest |a - b|.
double max_abs_diff(const Tensor& a, const Tensor& b);
// max |a - b| / max |b|: the error relative to the tensor's scale, which the parity tests quote
// (element-wise relative error is meaningless for the near-zero entries of a logit row).
double scaled_error(const Tensor& a, const Tensor& b);

::testing::AssertionResult all_close(const Tensor& a, const Tensor& b, double rtol = 1e-5,
                                     double atol = 1e-6);
::testing::AssertionResult bitwise_equal(const Tensor& a, const Tensor& b);

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradcheckOptions {
  double eps = 1e-6;
  double rtol = 1e-5;
  double atol = 1e-7;
  uint64_t seed = 1234;  // for the random output weighting
};

// Checks the analytic gradient of every input that requires grad against central differences.
// The inputs must be f64. The scalar checked is sum(f(inputs) * W) for a fixed random W, so every
// output element contributes with a distinct weight.
::testing::AssertionResult gradcheck(const Fn& f, std::vector<Tensor> inputs,
                                     GradcheckOptions options = {});

// Runs f with n threads and returns its result; the previous count is restored even if f throws.
template <typename F>
auto with_threads(int n, F&& f) {
  struct Restore {
    int prev;
    ~Restore() { set_threads(prev); }
  } restore{get_threads()};
  set_threads(n);
  return f();
}

// Error message of the tfm::Error that f throws, or "" if it throws none (other exceptions fail).
std::string error_of(const std::function<void()>& f);

}  // namespace tfm::testing

// Expects `stmt` to throw tfm::Error whose message contains `substring`.
#define EXPECT_TFM_ERROR(stmt, substring)                                         \
  do {                                                                            \
    const std::string tfm_err_ = ::tfm::testing::error_of([&] { (void)(stmt); }); \
    EXPECT_NE(tfm_err_, "") << "expected an error from: " #stmt;                  \
    EXPECT_NE(tfm_err_.find(substring), std::string::npos)                        \
        << "error \"" << tfm_err_ << "\" lacks \"" << substring << "\"";          \
  } while (0)
