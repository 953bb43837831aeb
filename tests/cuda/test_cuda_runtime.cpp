// The CUDA runtime layer: error formatting, size classes and launch geometry are checked on any
// machine with the CUDA plugin (libtfm_cuda.so); device storage and copies where a GPU exists, the
// "no CUDA device" errors where none does, and where the plugin is missing, that asking for the
// device says so.
#include <gtest/gtest.h>

#include <utility>

#include <string>
#include <vector>

#include "support/test_util.h"
#include "tfm/core/device_copy.h"

#include "tfm/core/allocator.h"
#include "tfm/core/cuda/check.h"
#include "tfm/core/cuda/device_allocator.h"
#include "tfm/core/cuda/runtime.h"
#include "tfm/ops/cuda/launch.h"
#include "tfm/ops/cuda_backend.h"

namespace tfm {
namespace {

using testing::error_of;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The full what() of the tfm::Error thrown by f (message and location), "" if none.
std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

int fake_cuda_call(int status) {
  return status;
}

// The tests of the plugin's host code, which need the plugin but no GPU.
class CudaBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::backend_available()) GTEST_SKIP() << cuda::no_device_reason();
  }
};

// A build without the CUDA toolkit has no plugin: asking for the device is a clear error naming
// it, never a crash.
TEST(CudaBackendMissing, DeviceRequestsFailClearly) {
  if (cuda::backend_available()) GTEST_SKIP() << "the CUDA plugin is here";
  EXPECT_FALSE(cuda::has_device());
  EXPECT_TRUE(contains(cuda::no_device_reason(), "no CUDA backend: libtfm_cuda.so"))
      << cuda::no_device_reason();
  const std::string e = error_of([] { Tensor::empty({4}, DType::f32, Device::cuda); });
  EXPECT_TRUE(contains(e, "no CUDA backend: libtfm_cuda.so")) << e;
  const std::string c = error_of([] { to_device(Tensor::ones({3}), Device::cuda); });
  EXPECT_TRUE(contains(c, "no CUDA backend: libtfm_cuda.so")) << c;
}

TEST_F(CudaBackend, CudaCheckSuccessDoesNotThrow) {
  EXPECT_NO_THROW(TFM_CUDA_CHECK(fake_cuda_call(0)));
  EXPECT_NO_THROW(TFM_CUBLAS_CHECK(fake_cuda_call(0)));
}

TEST_F(CudaBackend, CudaCheckCudaErrorNamesCallLocationAndRuntimeDescription) {
  // 2 is cudaErrorMemoryAllocation; 1 is cudaErrorInvalidValue. The descriptions come from the
  // CUDA runtime itself, which answers without a device.
  const int line = __LINE__ + 1;
  const std::string w = what_of([] { TFM_CUDA_CHECK(fake_cuda_call(2)); });
  EXPECT_TRUE(contains(w, "fake_cuda_call(2) failed: out of memory")) << w;
  EXPECT_TRUE(contains(w, "(CUDA cudaErrorMemoryAllocation = 2)")) << w;
  EXPECT_TRUE(contains(w, "test_cuda_runtime.cpp:" + std::to_string(line))) << w;
  const std::string m = error_of([] { TFM_CUDA_CHECK(fake_cuda_call(1)); });
  EXPECT_EQ(
      m.rfind("fake_cuda_call(1) failed: invalid argument (CUDA cudaErrorInvalidValue = 1)", 0), 0u)
      << m;
}

TEST_F(CudaBackend, CudaCheckCublasErrorNamesTheStatus) {
  // 7 is CUBLAS_STATUS_INVALID_VALUE, 3 CUBLAS_STATUS_ALLOC_FAILED.
  const std::string m = error_of([] { TFM_CUBLAS_CHECK(fake_cuda_call(7)); });
  EXPECT_TRUE(contains(m, "fake_cuda_call(7) failed: ")) << m;
  EXPECT_TRUE(contains(m, "(cuBLAS CUBLAS_STATUS_INVALID_VALUE = 7)")) << m;
  const std::string a = error_of([] { TFM_CUBLAS_CHECK(fake_cuda_call(3)); });
  EXPECT_TRUE(contains(a, "CUBLAS_STATUS_ALLOC_FAILED = 3")) << a;
}

TEST_F(CudaBackend, CudaCheckFormatErrorByHand) {
  EXPECT_EQ(cuda::detail::format_error("CUDA", "f(x)", 700, "cudaErrorIllegalAddress",
                                       "an illegal memory access was encountered"),
            "f(x) failed: an illegal memory access was encountered (CUDA "
            "cudaErrorIllegalAddress = 700)");
}

TEST_F(CudaBackend, CudaAllocatorSizeClasses) {
  using A = cuda::CudaCachingAllocator;
  size_t prev = 0;
  for (size_t b :
       {size_t{0}, size_t{1}, size_t{511}, size_t{512}, size_t{513}, size_t{4097}, size_t{100000},
        A::kSmallLimit - 1, A::kSmallLimit, A::kSmallLimit + 1, size_t{3} << 20,
        (size_t{3} << 20) + 1, size_t{1} << 30, (size_t{1} << 30) + 12345}) {
    const size_t c = A::size_class(b);
    EXPECT_GE(c, b);
    EXPECT_GE(c, prev) << "classes must grow with the request, bytes " << b;
    EXPECT_EQ(c % A::kGranule, 0u) << b;
    if (b <= A::kSmallLimit) {
      EXPECT_LT(c - std::max<size_t>(b, 1), A::kGranule) << b;
    } else {
      EXPECT_LE(c - b, b / 8) << "bytes " << b << " class " << c;
    }
    prev = c;
  }
  EXPECT_EQ(A::size_class(0), 512u);
  EXPECT_EQ(A::size_class(513), 1024u);
  // 3 MiB + 1: power-of-two floor 2 MiB, step 256 KiB -> 3.25 MiB.
  EXPECT_EQ(A::size_class((size_t{3} << 20) + 1), (size_t{13} << 18));
}

TEST(CudaLaunch, Geometry) {
  EXPECT_EQ(cuda::blocks_for(0), 1);
  EXPECT_EQ(cuda::blocks_for(1), 1);
  EXPECT_EQ(cuda::blocks_for(256), 1);
  EXPECT_EQ(cuda::blocks_for(257), 2);
  EXPECT_EQ(cuda::blocks_for(int64_t{1} << 40), cuda::kMaxBlocks);
  EXPECT_EQ(cuda::blocks_for(1000, 128, 4), 4);
  EXPECT_EQ(cuda::row_threads(1), 32);
  EXPECT_EQ(cuda::row_threads(128), 32);
  EXPECT_EQ(cuda::row_threads(129), 64);
  EXPECT_EQ(cuda::row_threads(512), 128);
  EXPECT_EQ(cuda::row_threads(32000), 1024);
}

TEST_F(CudaBackend, NoDeviceClearErrors) {
  if (cuda::has_device()) GTEST_SKIP() << "a CUDA device is present; this checks machines without";
  EXPECT_EQ(cuda::device_count(), 0);
  EXPECT_FALSE(cuda::no_device_reason().empty());
  const std::string m = error_of([] { cuda::require_device("the test"); });
  EXPECT_EQ(m.rfind("no CUDA device: the test needs one (", 0), 0u) << m;
  const std::string e = error_of([] { Tensor::empty({4}, DType::f32, Device::cuda); });
  EXPECT_TRUE(contains(e, "no CUDA device")) << e;
  const std::string c = error_of([] { to_device(Tensor::ones({3}), Device::cuda); });
  EXPECT_TRUE(contains(c, "no CUDA device")) << c;
  EXPECT_TRUE(contains(error_of([] { cuda::device_info(0); }), "no CUDA device"));
}

// Each way cudaGetDeviceCount fails, in the words a user can act on (cudaError_t values: they are
// the runtime's ABI), with the runtime's error name kept for bug reports.
TEST_F(CudaBackend, NoDeviceReasonsInPlainWords) {
  constexpr int kInsufficientDriver = 35, kStubLibrary = 34, kNoDevice = 100,
                kSystemDriverMismatch = 803;
  const std::string none = cuda::explain_no_device(kInsufficientDriver, 0, 12040);
  EXPECT_TRUE(contains(none, "no NVIDIA driver is installed")) << none;
  EXPECT_TRUE(contains(none, "cudaErrorInsufficientDriver")) << none;
  const std::string old = cuda::explain_no_device(kInsufficientDriver, 11080, 12040);
  EXPECT_TRUE(contains(old, "the NVIDIA driver (CUDA 11.8) is older than the CUDA 12.4 toolkit"))
      << old;
  const std::string gpu = cuda::explain_no_device(kNoDevice, 12040, 12040);
  EXPECT_TRUE(contains(gpu, "finds no GPU on this machine")) << gpu;
  EXPECT_TRUE(contains(cuda::explain_no_device(0, 12040, 12040), "finds no GPU"));
  EXPECT_TRUE(contains(cuda::explain_no_device(kStubLibrary, 0, 12040), "stub"));
  EXPECT_TRUE(
      contains(cuda::explain_no_device(kSystemDriverMismatch, 12040, 12040), "kernel module"));
  // This machine's own reason is one of them (the runtime's sentence is not the message).
  if (!cuda::has_device())
    EXPECT_FALSE(contains(cuda::no_device_reason(), "is insufficient for CUDA runtime"))
        << cuda::no_device_reason();
}

// From here on a GPU is needed.
class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::has_device()) GTEST_SKIP() << "no CUDA device: " << cuda::no_device_reason();
  }
};

TEST_F(CudaDevice, InfoIsSane) {
  const cuda::DeviceInfo d = cuda::device_info(0);
  EXPECT_GE(d.major, 7);
  EXPECT_GT(d.multiprocessors, 0);
  EXPECT_GT(d.total_memory, size_t{1} << 30);
  EXPECT_TRUE(contains(cuda::describe(d), d.name)) << cuda::describe(d);
  EXPECT_TRUE(
      contains(error_of([] { cuda::device_info(cuda::device_count()); }), "no CUDA device"));
}

TEST_F(CudaDevice, RoundTripCopiesAreExact) {
  for (DType dt : {DType::f32, DType::f64, DType::i32}) {
    const Tensor a = dt == DType::i32 ? testing::random_ids({7, 33}, 1000, 5)
                                      : testing::random_tensor({7, 33}, dt, 5);
    const Tensor d = to_device(a, Device::cuda);
    EXPECT_EQ(d.device(), Device::cuda);
    EXPECT_EQ(d.shape(), a.shape());
    const Tensor d2 = d.clone();  // device to device
    const Tensor back = to_device(d2, Device::cpu);
    EXPECT_EQ(back.device(), Device::cpu);
    EXPECT_TRUE(testing::bitwise_equal(back, a)) << dtype_name(dt);
  }
  // A strided host view is packed before the copy.
  const Tensor a = testing::random_tensor({5, 9}, DType::f32, 6);
  const Tensor at = a.transpose(0, 1);
  EXPECT_TRUE(
      testing::bitwise_equal(to_device(to_device(at, Device::cuda), Device::cpu), at.contiguous()));
  // to_vector reads device tensors through a copy.
  EXPECT_EQ(to_device(a, Device::cuda).to_vector<float>(), a.to_vector<float>());
}

TEST_F(CudaDevice, ZerosAndHostAccessErrors) {
  const Tensor z = Tensor::zeros({1000}, DType::f32, Device::cuda);
  for (float x : z.to_vector<float>()) ASSERT_EQ(x, 0.0f);
  EXPECT_TRUE(contains(error_of([&] { (void)z.at({3}); }), "is on cuda; copy it to the cpu"));
  EXPECT_TRUE(contains(error_of([&] { (void)z.to(DType::f64); }), "is on cuda"));
  // A non-zero fill goes through the host; a strided device view cannot be filled.
  EXPECT_EQ(Tensor::full({3}, 2.5, DType::f32, Device::cuda).to_vector<float>(),
            (std::vector<float>{2.5f, 2.5f, 2.5f}));
  Tensor strided = Tensor::zeros({4, 6}, DType::f32, Device::cuda).transpose(0, 1);
  EXPECT_TRUE(contains(error_of([&] { strided.fill_(1.0); }), "only a contiguous tensor"));
  // A strided device view is packed on the device (core/cuda/strided_copy.cu) before the copy.
  const Tensor a = testing::random_tensor({4, 6, 5}, DType::f32, 7);
  const Tensor dev = to_device(a, Device::cuda);
  for (const auto& [d0, d1] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{1, 2}})
    EXPECT_TRUE(testing::bitwise_equal(to_device(dev.transpose(d0, d1), Device::cpu),
                                       a.transpose(d0, d1).contiguous()))
        << d0 << " " << d1;
  EXPECT_TRUE(testing::bitwise_equal(to_device(dev.slice(1, 3).transpose(0, 2), Device::cpu),
                                     a.slice(1, 3).transpose(0, 2).contiguous()));
  // A strided device destination has no kernel yet: a clear error.
  Tensor dst = Tensor::zeros({6, 4}, DType::f32, Device::cuda).transpose(0, 1);
  const Tensor src = Tensor::zeros({4, 6}, DType::f32, Device::cuda);
  EXPECT_TRUE(contains(error_of([&] { dst.copy_(src); }), "need contiguous tensors"));
}

TEST_F(CudaDevice, AllocatorReusesBlocks) {
  auto& a = cuda::device_allocator();
  a.empty_cache();
  const AllocatorStats s0 = a.stats();
  void* first = nullptr;
  {
    auto p = a.allocate(10000);
    first = p.get();
    EXPECT_EQ(a.stats().in_use_bytes, s0.in_use_bytes + 10240);
  }
  EXPECT_EQ(a.stats().cached_bytes, s0.cached_bytes + 10240);
  auto q = a.allocate(10100);  // same class: the cached block comes back
  EXPECT_EQ(q.get(), first);
  EXPECT_EQ(a.stats().system_allocs, s0.system_allocs + 1);
  q.reset();
  a.empty_cache();
  EXPECT_EQ(a.stats().cached_bytes, 0u);
  // An impossible request fails with a clear message instead of crashing.
  const std::string m = error_of([&] { a.allocate(size_t{1} << 50); });
  EXPECT_TRUE(contains(m, "out of memory allocating")) << m;
}

TEST_F(CudaDevice, StreamsWork) {
  cuda::Stream s = cuda::Stream::create();
  EXPECT_NE(s.native(), nullptr);
  EXPECT_NO_THROW(s.synchronize());
  cuda::Stream moved = std::move(s);
  EXPECT_NO_THROW(moved.synchronize());
  EXPECT_NO_THROW(cuda::synchronize());
}

}  // namespace
}  // namespace tfm
