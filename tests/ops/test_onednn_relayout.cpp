// Packed oneDNN weights read by a matmul that wants another layout (primitives.h, OnednnWeights).
// Weights are packed once, in the layout the one-row matmul picks; on CPUs with AMX the matmuls
// of many rows pick another blocking, and a call must then read a reordered copy rather than
// fail (the failure a GPU machine's Sapphire Rapids host showed for every bf16/int8 translation).
// No CPU without AMX reaches that path with pack_*'s own layouts, so here the weights are given
// in the plain (K, N) layout, which no matmul wants: the product must equal the one of weights
// packed the usual way, bit for bit (the same primitive reads the same values), at several M, and
// the copy must be reused by later calls.
#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "tfm/core/cpu_isa.h"
#include "tfm/ops/cpu/primitives.h"

namespace {

// A (N, K) row-major weight seen as the plain (K, N) matrix with strides (1, K).
template <typename T>
tfm::cpu::OnednnWeights plain_weights(int64_t n, int64_t k, const std::vector<T>& w,
                                      dnnl::memory::data_type type) {
  auto data = std::shared_ptr<void>(new T[w.size()], [](void* p) { delete[] static_cast<T*>(p); });
  std::memcpy(data.get(), w.data(), w.size() * sizeof(T));
  auto desc = std::make_shared<dnnl::memory::desc>(dnnl::memory::dims{k, n}, type,
                                                   dnnl::memory::dims{1, k});
  return tfm::cpu::onednn_weights_as_laid_out(n, k, data, desc);
}

TEST(OnednnRelayout, Bf16WeightsInAnotherLayoutGiveThePackedProduct) {
  if (!tfm::cpu_has_bf16_dot()) GTEST_SKIP() << "no AVX512-BF16: the packed bf16 path is unused";
  const int64_t n = 48, k = 40;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> bits(0x3c00, 0x3fff);  // bf16 patterns of about ±0.01..2
  std::vector<uint16_t> w(n * k);
  for (auto& v : w) v = static_cast<uint16_t>(bits(rng) | (rng() & 1 ? 0x8000 : 0));
  const auto packed = tfm::cpu::pack_bf16_matmul_weights(n, k, w.data());
  const auto plain = plain_weights(n, k, w, dnnl::memory::data_type::bf16);
  for (int64_t m : {1, 3, 64, 200}) {
    std::vector<uint16_t> x(m * k);
    for (auto& v : x) v = static_cast<uint16_t>(bits(rng) | (rng() & 1 ? 0x8000 : 0));
    std::vector<float> want(m * n), got(m * n), again(m * n);
    tfm::cpu::matmul_primitive_bf16_packed(m, x.data(), packed, nullptr, tfm::Activation::none,
                                           want.data());
    tfm::cpu::matmul_primitive_bf16_packed(m, x.data(), plain, nullptr, tfm::Activation::none,
                                           got.data());
    tfm::cpu::matmul_primitive_bf16_packed(m, x.data(), plain, nullptr, tfm::Activation::none,
                                           again.data());  // from the kept copy
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float))) << "m=" << m;
    EXPECT_EQ(0, std::memcmp(want.data(), again.data(), want.size() * sizeof(float))) << "m=" << m;
  }
}

TEST(OnednnRelayout, Int8WeightsInAnotherLayoutGiveTheExactSums) {
  if (!tfm::cpu_has_vnni()) GTEST_SKIP() << "no VNNI: the oneDNN int8 path is unused";
  const int64_t n = 40, k = 64;
  std::mt19937 rng(11);
  std::vector<int8_t> q(n * k);
  for (auto& v : q) v = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
  const auto plain = plain_weights(n, k, q, dnnl::memory::data_type::s8);
  for (int64_t m : {1, 5, 130}) {
    std::vector<uint8_t> x(m * k);
    for (auto& v : x) v = static_cast<uint8_t>(rng() % 256);
    std::vector<int32_t> acc(m * n);
    tfm::cpu::matmul_primitive_u8s8(m, x.data(), plain, acc.data());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t sum = 0;  // vpdpbusd sums exactly: the integer dot product
        for (int64_t t = 0; t < k; ++t) sum += int64_t{x[i * k + t]} * q[j * k + t];
        ASSERT_EQ(sum, acc[i * n + j]) << "m=" << m << " (" << i << ", " << j << ")";
      }
  }
}

}  // namespace
