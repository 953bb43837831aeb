// MultiHeadAttention::attend bound for inference, over short keys: every query a one-query row
// of decode_attention's kernel (nn/attention.cpp, kRowKernelKeys), against the fused attention
// op composed by hand (to float precision) and against decode_attention called row by row (the
// weights, bit for bit); past the key limit, causal, unbound or with gradients: the fused op.
#include <vector>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/nn/attention.h"
#include "tfm/ops/attention.h"
#include "tfm/ops/decode_attention.h"
#include "tfm/ops/shape.h"
#include "tfm/types.h"

namespace tfm {
namespace {

constexpr int64_t kWidth = 32, kHeads = 4;

struct Case {
  Tensor query, memory, mask;
};

// B queries rows of T positions over memories of S; row 1 masks its last keys, row 2 all of
// them (its outputs 0 in both kernels).
Case make_case(int64_t b, int64_t t, int64_t s, uint64_t seed) {
  Case c{testing::random_tensor({b, t, kWidth}, DType::f32, seed),
         testing::random_tensor({b, s, kWidth}, DType::f32, seed + 1),
         Tensor::zeros({b, s}, DType::u8)};
  uint8_t* m = c.mask.data<uint8_t>();
  for (int64_t j = s / 2; j < s; ++j) m[1 * s + j] = 1;
  for (int64_t j = 0; j < s; ++j) m[2 * s + j] = 1;
  return c;
}

// The module with its four projections bound for inference in fp32.
void bind(nn::MultiHeadAttention& a) {
  for (nn::Linear* l : {&a.q_proj_, &a.k_proj_, &a.v_proj_, &a.out_proj_})
    l->bind(ComputeType::float32);
}

// The fused op, composed by hand from the module's projections.
AttentionResult fused(const nn::MultiHeadAttention& a, const Case& c, bool causal) {
  const nn::KVCache kv = a.project(c.memory);
  AttentionOptions o;
  o.causal = causal;
  o.return_weights = true;
  AttentionResult r = attention(a.q_proj_(c.query), kv.k, kv.v, kHeads, c.mask, o);
  r.out = a.out_proj_(r.out);
  return r;
}

TEST(AttentionRows, ShortKeysAreOneQueryRowsOfTheDecodeKernel) {
  Generator gen(3);
  nn::MultiHeadAttention a(kWidth, kHeads, true, 0.0, gen);
  bind(a);
  NoGradGuard ng;
  const int64_t B = 3, T = 7, S = 9;
  const Case c = make_case(B, T, S, 11);
  const nn::KVCache kv = a.project(c.memory);
  const AttentionResult with = a.attend(c.query, kv, c.mask, false, true, nullptr);
  const AttentionResult without = a.attend(c.query, kv, c.mask, false, false, nullptr);
  EXPECT_TRUE(testing::bitwise_equal(with.out, without.out));
  const AttentionResult ref = fused(a, c, false);
  EXPECT_LE(testing::scaled_error(with.out, ref.out), 1e-5);
  ASSERT_EQ(with.weights.shape(), (Shape{B, kHeads, T, S}));
  EXPECT_LE(testing::scaled_error(with.weights, ref.weights), 1e-5);
  // Row (b, t) is decode_attention's one query over keys row b, weights and all.
  const Tensor q = a.q_proj_(c.query);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      Tensor w;
      decode_attention(narrow(q.slice(b, b + 1), 1, t, 1).contiguous(), kv.k.slice(b, b + 1),
                       kv.v.slice(b, b + 1), kHeads, c.mask.slice(b, b + 1).contiguous(), 0.0, &w);
      for (int64_t h = 0; h < kHeads; ++h)
        EXPECT_TRUE(testing::bitwise_equal(
            narrow(with.weights.slice(b, b + 1).select(0).slice(h, h + 1).select(0), 0, t, 1)
                .contiguous()
                .reshape({S}),
            w.reshape({kHeads, S}).slice(h, h + 1).contiguous().reshape({S})))
            << "row " << b << ", position " << t << ", head " << h;
    }
}

TEST(AttentionRows, LongKeysCausalUnboundAndGradientsTakeTheFusedOp) {
  Generator gen(5);
  nn::MultiHeadAttention a(kWidth, kHeads, true, 0.0, gen);
  {
    NoGradGuard ng;
    const Case u = make_case(3, 5, 9, 11);  // unbound: the training kernels
    EXPECT_TRUE(testing::bitwise_equal(
        a.attend(u.query, a.project(u.memory), u.mask, false, false, nullptr).out,
        fused(a, u, false).out));
  }
  bind(a);
  {
    NoGradGuard ng;
    const Case c = make_case(3, 5, 513, 21);  // one key past the row kernel's limit
    const AttentionResult r = a.attend(c.query, a.project(c.memory), c.mask, false, true, nullptr);
    const AttentionResult ref = fused(a, c, false);
    EXPECT_TRUE(testing::bitwise_equal(r.out, ref.out));
    EXPECT_TRUE(testing::bitwise_equal(r.weights, ref.weights));
    const Case d = make_case(3, 6, 6, 31);
    const AttentionResult causal =
        a.attend(d.query, a.project(d.memory), d.mask, true, true, nullptr);
    const AttentionResult causal_ref = fused(a, d, true);
    EXPECT_TRUE(testing::bitwise_equal(causal.out, causal_ref.out));
  }
  // Gradients: the fused op, which has a backward (the forward drops the bindings, as a
  // linear layer's does).
  const Case c = make_case(3, 5, 9, 41);
  const AttentionResult r = a.attend(c.query, a.project(c.memory), c.mask, false, true, nullptr);
  NoGradGuard ng;
  EXPECT_TRUE(testing::bitwise_equal(r.out, fused(a, c, false).out));
}

}  // namespace
}  // namespace tfm
