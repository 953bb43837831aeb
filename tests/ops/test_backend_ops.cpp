// Every registered op case (tests/support/op_registry.h) through every check that applies:
// - Gradients: float64 central differences against the backward (cases with `grad` inputs).
// - Threads: 1 and 2 threads give the same bits (or, for oneDNN's GEMMs, each count its own
//   bits run after run).
// - CpuLevels: this process's level against AVX2, in a child process of this test binary run
//   with TFM_CPU_ISA=avx2 that writes every case's outputs: the same bits, or the case's
//   tolerance (skipped on an AVX2-only CPU, where there is one level).
// - CpuVsCuda: the same inputs on the GPU, within the case's tolerance (skipped without one).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "support/op_registry.h"
#include "support/test_util.h"
#include "tfm/core/cpu_isa.h"
#include "tfm/core/device_copy.h"
#include "tfm/core/parallel.h"
#ifdef TFM_WITH_CUDA
#include "tfm/core/cuda/runtime.h"
#endif

namespace tfm {
namespace {

using testing::op_cases;
using testing::OpCase;

std::string name(const OpCase& c) {
  return c.op + " (" + c.variant + ")";
}

bool floating(const Tensor& t) {
  return t.dtype() == DType::f32 || t.dtype() == DType::f64;
}

std::vector<Tensor> run_with_threads(const OpCase& c, const std::vector<Tensor>& in, int threads) {
  return testing::with_threads(threads, [&] { return c.run(in); });
}

TEST(BackendOps, EveryOpHasACase) {
  EXPECT_GE(op_cases().size(), 40u);
  for (const OpCase& c : op_cases()) {
    EXPECT_FALSE(c.run(c.inputs(DType::f32)).empty()) << name(c);
    if (!c.grad.empty()) EXPECT_EQ(c.inputs(DType::f64).size(), c.inputs(DType::f32).size());
  }
}

TEST(BackendOps, Gradients) {
  int checked = 0;
  for (const OpCase& c : op_cases()) {
    if (c.grad.empty()) continue;
    std::vector<Tensor> in = c.inputs(DType::f64);
    for (size_t i : c.grad) in.at(i).set_requires_grad(true);
    EXPECT_TRUE(testing::gradcheck([&](const std::vector<Tensor>& x) { return c.run(x)[0]; }, in))
        << name(c);
    ++checked;
  }
  EXPECT_GE(checked, 25);
}

TEST(BackendOps, Threads) {
  for (const OpCase& c : op_cases()) {
    const std::vector<Tensor> in = c.inputs(DType::f32);
    const auto one = run_with_threads(c, in, 1);
    const auto two = run_with_threads(c, in, 2);
    const auto again = run_with_threads(c, in, 2);
    ASSERT_EQ(one.size(), two.size()) << name(c);
    for (size_t k = 0; k < one.size(); ++k) {
      EXPECT_TRUE(testing::bitwise_equal(two[k], again[k])) << name(c) << " output " << k;
      if (c.threads_bitwise)
        EXPECT_TRUE(testing::bitwise_equal(one[k], two[k])) << name(c) << " output " << k;
      else if (floating(one[k]))
        EXPECT_LE(testing::scaled_error(two[k], one[k]), c.tolerance) << name(c);
    }
  }
}

// The outputs of every case, in registry order, as raw bytes (what a child at another level
// writes and the parent compares).
void dump(std::ostream& out) {
  for (const OpCase& c : op_cases())
    for (const Tensor& t : c.run(c.inputs(DType::f32))) {
      const Tensor x = t.contiguous();
      const uint64_t bytes = static_cast<uint64_t>(x.numel()) * dtype_size(x.dtype());
      out.write(reinterpret_cast<const char*>(&bytes), sizeof bytes);
      out.write(static_cast<const char*>(x.raw_data()), static_cast<std::streamsize>(bytes));
    }
}

// Run by CpuLevels in a child process (TFM_OPS_DUMP names the file); skipped otherwise.
TEST(BackendOps, DumpOutputs) {
  const char* path = std::getenv("TFM_OPS_DUMP");
  if (path == nullptr) GTEST_SKIP() << "the child of BackendOps.CpuLevels";
  std::ofstream out(path, std::ios::binary);
  dump(out);
  ASSERT_TRUE(out.good());
}

TEST(BackendOps, CpuLevels) {
  if (cpu_isa() == CpuIsa::avx2) GTEST_SKIP() << "one CPU level here (avx2)";
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  ASSERT_GT(n, 0);
  exe[n] = '\0';
  const std::string file = ::testing::TempDir() + "/tfm_ops_avx2.bin";
  const std::string command = "TFM_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2 TFM_OPS_DUMP='" + file +
                              "' '" + exe + "' --gtest_filter=BackendOps.DumpOutputs >/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(file, std::ios::binary);
  int compared = 0;
  for (const OpCase& c : op_cases()) {
    const auto here = c.run(c.inputs(DType::f32));
    for (size_t k = 0; k < here.size(); ++k) {
      uint64_t bytes = 0;
      in.read(reinterpret_cast<char*>(&bytes), sizeof bytes);
      const Tensor x = here[k].contiguous();
      ASSERT_EQ(bytes, static_cast<uint64_t>(x.numel()) * dtype_size(x.dtype())) << name(c);
      Tensor avx2 = Tensor::empty(x.shape(), x.dtype());
      in.read(static_cast<char*>(avx2.raw_data()), static_cast<std::streamsize>(bytes));
      if (c.levels == testing::Levels::bitwise)
        EXPECT_TRUE(testing::bitwise_equal(x, avx2)) << name(c) << " output " << k;
      else
        EXPECT_LE(testing::scaled_error(x, avx2), c.tolerance) << name(c) << " output " << k;
      ++compared;
    }
  }
  EXPECT_TRUE(in.good());
  EXPECT_GE(compared, 40);
  std::remove(file.c_str());
}

// Where two float tensors first differ (for the failure message).
std::string first_difference(const Tensor& got, const Tensor& want) {
  const Tensor g = got.contiguous(), w = want.contiguous();
  const float *a = g.data<float>(), *b = w.data<float>();
  for (int64_t i = 0; i < w.numel(); ++i)
    if (!(a[i] == b[i]) && !(std::abs(a[i] - b[i]) <= 1e-5f * std::max(1.0f, std::abs(b[i]))))
      return ": first at element " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " +
             std::to_string(b[i]);
  return "";
}

TEST(BackendOps, CpuVsCuda) {
#ifdef TFM_WITH_CUDA
  if (!cuda::has_device()) GTEST_SKIP() << "no GPU: " << cuda::no_device_reason();
  int compared = 0;
  for (const OpCase& c : op_cases()) {
    if (!c.cuda) continue;
    const std::vector<Tensor> in = c.inputs(DType::f32);
    std::vector<Tensor> on_gpu;
    for (const Tensor& t : in) on_gpu.push_back(to_device(t, Device::cuda));
    const auto want = c.run(in);
    const auto got = c.run(on_gpu);
    ASSERT_EQ(want.size(), got.size()) << name(c);
    for (size_t k = 0; k < want.size(); ++k) {
      const Tensor g = to_device(got[k], Device::cpu);
      if (floating(want[k]))
        EXPECT_LE(testing::scaled_error(g, want[k]), c.tolerance)
            << name(c) << " output " << k << first_difference(g, want[k]);
      else
        EXPECT_TRUE(testing::bitwise_equal(g, want[k])) << name(c) << " output " << k;
      ++compared;
    }
  }
  EXPECT_GE(compared, 30);
#else
  GTEST_SKIP() << "a build without the CUDA backend";
#endif
}

}  // namespace
}  // namespace tfm
