// One-query attention (decoding steps) against the general attention op, which shares no code
// with it, and against the same maths in double for a fully masked row and a strided KV cache;
// the probabilities it returns on request.
#include <algorithm>
#include <cmath>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/ops/attention.h"
#include "tfm/ops/decode_attention.h"
#include "tfm/ops/index.h"
#include "tfm/ops/shape.h"

namespace tfm {
namespace {

using testing::random_tensor;

Tensor random_mask(int64_t b, int64_t s, uint64_t seed) {
  Tensor m = Tensor::empty({b, s}, DType::u8);
  uint64_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < b * s; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    m.data<uint8_t>()[i] = (x >> 60) < 4 ? 1 : 0;  // a quarter masked
  }
  for (int64_t i = 0; i < b; ++i) m.data<uint8_t>()[i * s] = 0;  // every row sees a key
  return m;
}

TEST(DecodeAttention, MatchesGeneralAttention) {
  NoGradGuard no_grad;
  for (int64_t heads : {1, 2, 4})
    for (int64_t dh : {7, 16, 64})
      for (int64_t s : {1, 5, 33, 70})
        for (bool masked : {false, true}) {
          SCOPED_TRACE("H=" + std::to_string(heads) + " Dh=" + std::to_string(dh) +
                       " S=" + std::to_string(s) + " mask=" + std::to_string(masked));
          const int64_t b = 3, c = heads * dh;
          const uint64_t seed = static_cast<uint64_t>(heads * 100 + dh * 10 + s);
          const Tensor q = random_tensor({b, 1, c}, DType::f32, seed, -2.0, 2.0);
          const Tensor k = random_tensor({b, s, c}, DType::f32, seed + 1, -2.0, 2.0);
          const Tensor v = random_tensor({b, s, c}, DType::f32, seed + 2);
          const Tensor mask = masked ? random_mask(b, s, seed) : Tensor();
          const Tensor got = decode_attention(q, k, v, heads, mask);
          ASSERT_EQ(got.shape(), (Shape{b, 1, c}));
          AttentionOptions opt;
          opt.causal = true;  // one query aligned to the end sees every key
          opt.return_weights = true;
          const AttentionResult ref = attention(q, k, v, heads, mask, opt);
          EXPECT_LT(testing::max_abs_diff(got, ref.out), 2e-6);
          EXPECT_GT(testing::max_abs_diff(got, Tensor::zeros(got.shape())), 1e-3);
          // The probabilities, when asked for, are attention()'s, and the output is bitwise
          // what it is without them.
          Tensor weights;
          const Tensor with = decode_attention(q, k, v, heads, mask, 0.0, &weights);
          ASSERT_EQ(weights.shape(), (Shape{b, heads, 1, s}));
          EXPECT_LT(testing::max_abs_diff(weights, ref.weights), 1e-6);
          EXPECT_EQ(testing::max_abs_diff(with, got), 0.0);
        }
}

// A key's score is one fixed sum whether its position falls in a block of positions scored
// together or in the tail scored one at a time: the same key at positions 2, 5 (blocks) and 8
// (the tail of 9) gets bitwise the same probability, for every head. Decoding results then do not
// depend on how many positions precede a key, and stay those of the one-at-a-time kernel.
TEST(DecodeAttention, AKeysScoreDoesNotDependOnItsPosition) {
  NoGradGuard no_grad;
  for (int64_t dh : {16, 64}) {
    const int64_t heads = 4, c = heads * dh, s = 9;
    const Tensor q = random_tensor({2, 1, c}, DType::f32, 5, -2.0, 2.0);
    Tensor k = random_tensor({2, s, c}, DType::f32, 6, -2.0, 2.0).contiguous();
    const Tensor v = random_tensor({2, s, c}, DType::f32, 7);
    float* kd = k.data<float>();
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t at : {5, 8})
        std::copy(kd + (b * s + 2) * c, kd + (b * s + 3) * c, kd + (b * s + at) * c);
    Tensor weights;
    decode_attention(q, k, v, heads, Tensor(), 0.0, &weights);  // (B, H, 1, S)
    const float* w = weights.contiguous().data<float>();
    for (int64_t bh = 0; bh < 2 * heads; ++bh) {
      const float* row = w + bh * s;
      EXPECT_EQ(row[5], row[2]) << "Dh " << dh << " row " << bh;
      EXPECT_EQ(row[8], row[2]) << "Dh " << dh << " row " << bh;
      EXPECT_NE(row[1], row[2]);  // the other keys differ
    }
  }
}

// Keys/values as a KV cache holds them: the first S of a longer buffer per row, read in place;
// a row whose keys are all masked gives zeros; a custom scale.
TEST(DecodeAttention, StridedCacheMaskedRowAndScale) {
  NoGradGuard no_grad;
  const int64_t b = 2, cap = 9, s = 6, heads = 2, dh = 16, c = heads * dh;
  const Tensor kbuf = random_tensor({b, cap, c}, DType::f32, 41);
  const Tensor vbuf = random_tensor({b, cap, c}, DType::f32, 42);
  // As KVCache views its buffers: positions [0, S) of every row, the row stride kept.
  const Tensor k = kbuf.transpose(0, 1).slice(0, s).transpose(0, 1);
  const Tensor v = vbuf.transpose(0, 1).slice(0, s).transpose(0, 1);
  ASSERT_FALSE(k.is_contiguous());
  ASSERT_EQ(k.strides()[0], cap * c);
  const Tensor q = random_tensor({b, 1, c}, DType::f32, 43);
  Tensor mask = Tensor::zeros({b, s}, DType::u8);
  for (int64_t j = 0; j < s; ++j) mask.data<uint8_t>()[s + j] = 1;  // row 1 sees nothing
  mask.data<uint8_t>()[2] = 1;
  const double scale = 0.37;
  Tensor weights;
  const Tensor got = decode_attention(q, k, v, heads, mask, scale, &weights);
  const Tensor kc = k.contiguous(), vc = v.contiguous();
  for (int64_t h = 0; h < heads; ++h) {
    // Row 0 in double.
    std::vector<double> p(s);
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < s; ++j) {
      double d = 0;
      for (int64_t e = 0; e < dh; ++e)
        d += double(q.data<float>()[h * dh + e]) * kc.data<float>()[j * c + h * dh + e];
      p[j] = j == 2 ? -INFINITY : d * scale;
      mx = std::max(mx, p[j]);
    }
    for (double& x : p) sum += x = std::exp(x - mx);
    for (int64_t j = 0; j < s; ++j) {
      EXPECT_NEAR(weights.data<float>()[h * s + j], p[j] / sum, 1e-6);
      EXPECT_EQ(weights.data<float>()[(heads + h) * s + j], 0.f);  // the fully masked row
    }
    for (int64_t e = 0; e < dh; ++e) {
      double o = 0;
      for (int64_t j = 0; j < s; ++j) o += p[j] * vc.data<float>()[j * c + h * dh + e];
      EXPECT_NEAR(got.data<float>()[h * dh + e], o / sum, 1e-6);
      EXPECT_EQ(got.data<float>()[c + h * dh + e], 0.f);  // the fully masked row
    }
  }
  EXPECT_NE(testing::error_of([&] {
              decode_attention(q, k, v, 3, Tensor());
            }).find("3 heads do not divide the width 32"),
            std::string::npos);
  const Tensor q2 = random_tensor({b, 2, c}, DType::f32, 44);
  EXPECT_NE(testing::error_of([&] {
              decode_attention(q2, k, v, heads, Tensor());
            }).find("q must be an f32 tensor (B, 1, C)"),
            std::string::npos);
}

// kv_rows: query rows reading shared key rows (the beams of a sentence and its source) give,
// bitwise, what the gathered rows give, weights included; bad maps are refused.
TEST(DecodeAttention, SharedKeyRowsEqualGatheredRows) {
  NoGradGuard no_grad;
  const int64_t sources = 3, s = 11, heads = 4, dh = 16, c = heads * dh;
  const std::vector<int64_t> map = {0, 0, 0, 2, 1, 1, 2, 0};  // rows 8, in beam order
  const int64_t b = static_cast<int64_t>(map.size());
  const Tensor q = random_tensor({b, 1, c}, DType::f32, 51, -2.0, 2.0);
  const Tensor k = random_tensor({sources, s, c}, DType::f32, 52, -2.0, 2.0);
  const Tensor v = random_tensor({sources, s, c}, DType::f32, 53);
  const Tensor mask = random_mask(sources, s, 54);
  std::vector<int32_t> map32(map.begin(), map.end());
  const Tensor rows = Tensor::from_vector<int32_t>({b}, map32);
  Tensor w_got, w_want;
  const Tensor got = decode_attention(q, k, v, heads, mask, 0.0, &w_got, rows);
  const Tensor want = decode_attention(q, index_rows(k, map), index_rows(v, map), heads,
                                       index_rows(mask, map), 0.0, &w_want);
  EXPECT_EQ(testing::max_abs_diff(got, want), 0.0);
  EXPECT_EQ(testing::max_abs_diff(w_got, w_want), 0.0);
  EXPECT_GT(testing::max_abs_diff(got, Tensor::zeros(got.shape())), 1e-3);
  const Tensor bad = Tensor::from_vector<int32_t>({b}, {0, 0, 0, 3, 1, 1, 2, 0});
  EXPECT_NE(testing::error_of([&] {
              decode_attention(q, k, v, heads, mask, 0.0, nullptr, bad);
            }).find("kv_rows[3] = 3 outside the 3 key rows"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              decode_attention(q, k, v, heads, mask);  // no map: row counts must agree
            }).find("do not match"),
            std::string::npos);
}

}  // namespace
}  // namespace tfm
