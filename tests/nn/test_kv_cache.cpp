// The preallocated KV cache: appends write in place, views read through the batch stride give
// what a contiguous cache gives, reorder (slots, no copies) equals a plain gather, and decoding
// in steady state takes no new memory from the system.
#include <vector>

#include "support/test_util.h"
#include "tfm/autograd/grad_mode.h"
#include "tfm/core/allocator.h"
#include "tfm/model/transformer.h"
#include "tfm/nn/attention.h"
#include "tfm/ops/attention.h"
#include "tfm/ops/decode_attention.h"
#include "tfm/ops/shape.h"

namespace tfm {
namespace {

// The (B, L, C) tensor a cache must equal: the chunks concatenated along positions, element by
// element.
Tensor reference_concat(const std::vector<Tensor>& chunks) {
  const int64_t b = chunks[0].size(0), c = chunks[0].size(2);
  int64_t len = 0;
  for (const Tensor& t : chunks) len += t.size(1);
  Tensor out = Tensor::empty({b, len, c});
  float* o = out.data<float>();
  int64_t at = 0;
  for (const Tensor& t : chunks) {
    for (int64_t i = 0; i < b; ++i)
      for (int64_t p = 0; p < t.size(1); ++p)
        for (int64_t j = 0; j < c; ++j)
          o[(i * len + at + p) * c + j] = static_cast<float>(t.at({i, p, j}));
    at += t.size(1);
  }
  return out;
}

// Rows `rows` of t along axis 0 (repeats allowed), composed from narrow and concat: what a
// reorder must leave.
Tensor gather(const Tensor& t, const std::vector<int64_t>& rows) {
  std::vector<Tensor> parts;
  for (int64_t r : rows) parts.push_back(narrow(t, 0, r, 1));
  return concat(parts, 0).contiguous();
}

TEST(KVCache, AppendWritesInPlaceWithinTheReservation) {
  nn::KVCache cache;
  std::vector<Tensor> ks, vs;
  const void* storage = nullptr;
  for (int step = 0; step < 6; ++step) {
    const int64_t t = step == 0 ? 2 : 1;  // a prompt of two, then one a step
    ks.push_back(testing::random_tensor({3, t, 8}, DType::f32, 10 + step));
    vs.push_back(testing::random_tensor({3, t, 8}, DType::f32, 20 + step));
    cache.append(ks.back(), vs.back(), /*reserve=*/16);
    if (step == 0) storage = cache.k.storage().get();
    EXPECT_EQ(cache.capacity(), 16);
    EXPECT_EQ(cache.k.storage().get(), storage) << "step " << step << " reallocated";
    EXPECT_EQ(cache.length(), step + 2);
    EXPECT_TRUE(testing::bitwise_equal(cache.k.contiguous(), reference_concat(ks)));
    EXPECT_TRUE(testing::bitwise_equal(cache.v.contiguous(), reference_concat(vs)));
  }
  EXPECT_EQ(cache.k.strides()[0], 16 * 8);  // a view of the buffer, not a copy
}

// Unbounded: 32 positions, then doubling. Bounded by `reserve`: never past it while it is
// enough (32, then 40 and not 64), doubling again beyond it. Every growth keeps what it held.
TEST(KVCache, GrowsByDoublingWithinTheBoundAndKeepsWhatItHolds) {
  for (int64_t reserve : {int64_t{0}, int64_t{40}}) {
    SCOPED_TRACE("reserve " + std::to_string(reserve));
    nn::KVCache cache;
    std::vector<Tensor> ks, vs;
    std::vector<int64_t> caps;
    for (int step = 0; step < 70; ++step) {
      ks.push_back(testing::random_tensor({2, 1, 4}, DType::f32, 30 + step));
      vs.push_back(testing::random_tensor({2, 1, 4}, DType::f32, 130 + step));
      cache.append(ks.back(), vs.back(), reserve);
      if (caps.empty() || caps.back() != cache.capacity()) caps.push_back(cache.capacity());
    }
    const std::vector<int64_t> want =
        reserve == 0 ? std::vector<int64_t>{32, 64, 128} : std::vector<int64_t>{32, 40, 80};
    EXPECT_EQ(caps, want);
    EXPECT_EQ(cache.length(), 70);
    EXPECT_TRUE(testing::bitwise_equal(cache.k.contiguous(), reference_concat(ks)));
    EXPECT_TRUE(testing::bitwise_equal(cache.v.contiguous(), reference_concat(vs)));
  }
}

TEST(KVCache, ReorderMatchesAGatherAndCopiesNoKeys) {
  nn::KVCache cache;
  Tensor k = testing::random_tensor({4, 5, 6}, DType::f32, 1);
  Tensor v = testing::random_tensor({4, 5, 6}, DType::f32, 2);
  cache.append(k, v, 12);
  auto expect_rows = [&](const Tensor& want_k, const Tensor& want_v, const char* what) {
    const auto [got_k, got_v] = cache.rows_in_order();
    EXPECT_TRUE(testing::bitwise_equal(got_k.contiguous(), want_k)) << what;
    EXPECT_TRUE(testing::bitwise_equal(got_v.contiguous(), want_v)) << what;
    EXPECT_EQ(cache.batch(), want_k.size(0)) << what;
  };
  const void* buffer = cache.k.storage().get();
  Tensor want_k = k, want_v = v;
  // Same row count each time (beam search in steady state): only the slots move.
  const std::vector<std::vector<int64_t>> orders = {
      {3, 3, 0, 1}, {1, 0, 2, 2}, {0, 1, 2, 3}, {2, 2, 2, 0}, {3, 1, 1, 0}};
  for (const auto& rows : orders) {
    cache.reorder(rows);
    want_k = gather(want_k, rows);
    want_v = gather(want_v, rows);
    expect_rows(want_k, want_v, "reorder");
    EXPECT_EQ(cache.k.storage().get(), buffer) << "a reorder copied the keys";
    ASSERT_TRUE(cache.slots.defined());
    EXPECT_EQ(cache.slots.shape(), (Shape{4, 5}));
  }
  // Appending after a reorder writes each row's new position in its own buffer row, which no
  // history holds: every row reads its ancestors' positions and its new one.
  Tensor k1 = testing::random_tensor({4, 1, 6}, DType::f32, 5);
  Tensor v1 = testing::random_tensor({4, 1, 6}, DType::f32, 6);
  cache.append(k1, v1);
  want_k = reference_concat({want_k, k1});
  want_v = reference_concat({want_v, v1});
  expect_rows(want_k, want_v, "append after reorder");
  // More rows (beams expanding), then fewer (a sentence finished), appending in between.
  cache.reorder({0, 0, 1, 1, 2, 2, 3, 3});
  want_k = gather(want_k, {0, 0, 1, 1, 2, 2, 3, 3});
  want_v = gather(want_v, {0, 0, 1, 1, 2, 2, 3, 3});
  Tensor k2 = testing::random_tensor({8, 1, 6}, DType::f32, 7);
  Tensor v2 = testing::random_tensor({8, 1, 6}, DType::f32, 8);
  cache.append(k2, v2);
  want_k = reference_concat({want_k, k2});
  want_v = reference_concat({want_v, v2});
  expect_rows(want_k, want_v, "after expanding");
  cache.reorder({7, 2});
  want_k = gather(want_k, {7, 2});
  want_v = gather(want_v, {7, 2});
  expect_rows(want_k, want_v, "after shrinking");
  // The slots themselves: an appended row's positions are its own row; a reorder moves them.
  nn::KVCache plain;
  plain.append(k, v, 8);
  EXPECT_EQ(plain.slots.contiguous().to_vector<int32_t>(),
            (std::vector<int32_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3}));
  plain.reorder({2, 0});
  plain.append(testing::random_tensor({2, 1, 6}, DType::f32, 9),
               testing::random_tensor({2, 1, 6}, DType::f32, 10));
  EXPECT_EQ(plain.slots.contiguous().to_vector<int32_t>(),
            (std::vector<int32_t>{2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_TRUE(testing::error_of([&] {
                cache.reorder({0, 2});
              }).find("out of range") != std::string::npos);
}

// Beam search's pattern across the caches' growth (32 positions, then 64, then the bound of 70):
// a reorder every step, an append every step; every row reads its own history whatever buffer
// the earlier positions were copied into.
TEST(KVCache, ReordersAcrossGrowthKeepEveryRowsHistory) {
  nn::KVCache cache;
  const int64_t B = 3, C = 5, steps = 70;
  Tensor want_k, want_v;
  std::vector<int64_t> caps;
  for (int64_t step = 0; step < steps; ++step) {
    if (step > 0) {
      const std::vector<int64_t> rows = {(step * 2) % B, step % B, 0};
      cache.reorder(rows);
      want_k = gather(want_k, rows);
      want_v = gather(want_v, rows);
    }
    const Tensor k = testing::random_tensor({B, 1, C}, DType::f32, 500 + step);
    const Tensor v = testing::random_tensor({B, 1, C}, DType::f32, 700 + step);
    cache.append(k, v, steps);
    want_k = step == 0 ? k : reference_concat({want_k, k});
    want_v = step == 0 ? v : reference_concat({want_v, v});
    if (caps.empty() || caps.back() != cache.capacity()) caps.push_back(cache.capacity());
    const auto [got_k, got_v] = cache.rows_in_order();
    ASSERT_TRUE(testing::bitwise_equal(got_k.contiguous(), want_k)) << "step " << step;
    ASSERT_TRUE(testing::bitwise_equal(got_v.contiguous(), want_v)) << "step " << step;
  }
  EXPECT_EQ(caps, (std::vector<int64_t>{32, 64, 70}));
}

// Rows that finish leave the batch (a reorder to fewer rows, some repeated, as beams share
// ancestors): the next growth gives the new buffers only the rows in use, each row's history
// gathered into its own row, and every row's history stays what it was.
TEST(KVCache, GrowthAfterRowsFinishKeepsOnlyTheRowsInUse) {
  nn::KVCache cache;
  const int64_t C = 4, steps = 70;
  const std::vector<std::pair<int64_t, std::vector<int64_t>>> finish = {
      {20, {4, 1, 1, 3}}, {40, {3, 0}}, {50, {1}}};
  int64_t B = 6;
  Tensor want_k, want_v;
  std::vector<std::pair<int64_t, int64_t>> grown;  // (capacity, buffer rows in use) at growths
  for (int64_t step = 0; step < steps; ++step) {
    for (const auto& [at, rows] : finish) {
      if (at != step) continue;
      cache.reorder(rows);
      want_k = gather(want_k, rows);
      want_v = gather(want_v, rows);
      B = static_cast<int64_t>(rows.size());
    }
    const int64_t cap = cache.capacity();
    const Tensor k = testing::random_tensor({B, 1, C}, DType::f32, 900 + step);
    const Tensor v = testing::random_tensor({B, 1, C}, DType::f32, 1100 + step);
    cache.append(k, v, steps);
    want_k = step == 0 ? k : reference_concat({want_k, k});
    want_v = step == 0 ? v : reference_concat({want_v, v});
    if (cache.capacity() != cap) grown.emplace_back(cache.capacity(), cache.k.size(0));
    const auto [got_k, got_v] = cache.rows_in_order();
    ASSERT_TRUE(testing::bitwise_equal(got_k.contiguous(), want_k)) << "step " << step;
    ASSERT_TRUE(testing::bitwise_equal(got_v.contiguous(), want_v)) << "step " << step;
  }
  // The first buffers hold the 6 rows; the growth at step 32, after the batch fell to 4 rows at
  // step 20, keeps 4; the one at step 64 (to the reserve, 70) keeps 1.
  EXPECT_EQ(grown, (std::vector<std::pair<int64_t, int64_t>>{{32, 6}, {64, 4}, {70, 1}}));
}

// The attention of a cache with slots (decode kernel and general kernel) equals the attention of
// its rows in order, bitwise for the decode kernel.
TEST(KVCache, AttentionOverSlotsEqualsRowsInOrder) {
  NoGradGuard ng;
  nn::KVCache cache;
  cache.append(testing::random_tensor({3, 9, 16}, DType::f32, 21),
               testing::random_tensor({3, 9, 16}, DType::f32, 22), 16);
  cache.reorder({2, 0, 0, 1});
  cache.append(testing::random_tensor({4, 1, 16}, DType::f32, 23),
               testing::random_tensor({4, 1, 16}, DType::f32, 24));
  ASSERT_TRUE(cache.slots.defined());
  const auto [k, v] = cache.rows_in_order();
  const Tensor q = testing::random_tensor({4, 1, 16}, DType::f32, 25);
  Tensor w_slots, w_rows;
  const Tensor got =
      decode_attention(q, cache.k, cache.v, 4, Tensor(), 0.0, &w_slots, Tensor(), cache.slots);
  const Tensor want = decode_attention(q, k, v, 4, Tensor(), 0.0, &w_rows);
  EXPECT_TRUE(testing::bitwise_equal(got, want));
  EXPECT_TRUE(testing::bitwise_equal(w_slots, w_rows));
  AttentionOptions o;
  o.causal = true;
  EXPECT_LE(testing::max_abs_diff(attention(q, k, v, 4, Tensor(), o).out, got), 2e-6);
  EXPECT_NE(testing::error_of([&] {
              decode_attention(q, cache.k, cache.v, 4, Tensor(), 0.0, nullptr, Tensor(),
                               Tensor::zeros({4, 3}, DType::i32));
            }).find("kv_slots must be i32 (4, 10)"),
            std::string::npos);
}

TEST(KVCache, AttentionReadsTheStridedViewAsAContiguousCopy) {
  NoGradGuard ng;
  nn::KVCache cache;
  cache.append(testing::random_tensor({3, 7, 16}, DType::f32, 5),
               testing::random_tensor({3, 7, 16}, DType::f32, 6), 32);
  ASSERT_FALSE(cache.k.is_contiguous());
  Tensor q = testing::random_tensor({3, 1, 16}, DType::f32, 7);
  Tensor mask = Tensor::zeros({3, 7}, DType::u8);
  mask.data<uint8_t>()[2 * 7 + 6] = 1;
  AttentionOptions o;
  o.causal = true;
  o.return_weights = true;
  AttentionResult strided = attention(q, cache.k, cache.v, 4, mask, o);
  AttentionResult copied = attention(q, cache.k.contiguous(), cache.v.contiguous(), 4, mask, o);
  EXPECT_TRUE(testing::bitwise_equal(strided.out, copied.out));
  EXPECT_TRUE(testing::bitwise_equal(strided.weights, copied.weights));
}

ModelConfig small_model() {
  ModelConfig c = ModelConfig::preset("tiny");
  c.d_model = 16, c.heads = 4, c.d_ff = 24, c.encoder_layers = 2, c.decoder_layers = 2;
  c.dropout = 0.0;
  c.src_vocab_size = c.trg_vocab_size = 17;
  c.max_length = 64;
  return c;
}

// Incremental decoding over a cache preallocated for the whole output gives the logits of
// forward() over the prefix, before and after a beam-style reorder.
TEST(KVCache, ReservedDecodingEqualsFullRecompute) {
  const ModelConfig c = small_model();
  Transformer m(c, 3);
  NoGradGuard ng;
  const int64_t B = 3, T = 9;
  Tensor src = testing::random_ids({B, 6}, c.src_vocab_size - 3, 8);
  Tensor trg = testing::random_ids({B, T}, c.trg_vocab_size - 3, 9);
  for (Tensor* t : {&src, &trg})
    for (int64_t i = 0; i < t->numel(); ++i) t->data<int32_t>()[i] += 3;
  for (int64_t b = 0; b < B; ++b) trg.data<int32_t>()[b * T] = static_cast<int32_t>(c.bos_id);
  Tensor full = m.forward(src, trg);  // (B, T, V)
  DecoderState st = m.start(src);
  st.reserve = T;
  for (int64_t t = 0; t < T; ++t) {
    Tensor logits = m.step(st, narrow(trg, 1, t, 1).contiguous().reshape({B}));
    Tensor ref = narrow(full, 1, t, 1).contiguous().reshape({B, c.trg_vocab_size});
    EXPECT_LE(testing::scaled_error(logits, ref), 1e-5) << "step " << t;
    EXPECT_EQ(st.layers[0].self.capacity(), T);
  }
}

// Beam-style reorders: expanding each source to two rows moves the cross-attention caches;
// permuting rows among the beams of one source leaves them untouched (same buffers) and moves
// only the self-attention caches. Logits follow forward() over each row's own history.
TEST(KVCache, ReorderWithinASourceKeepsTheCrossCaches) {
  const ModelConfig c = small_model();
  Transformer m(c, 5);
  NoGradGuard ng;
  Tensor src = Tensor::from_vector<int32_t>({2, 4}, {5, 6, 7, 8, 9, 10, 0, 0});
  DecoderState st = m.start(src);
  st.reserve = 8;
  // Row histories (target prefixes) as they evolve, to recompute with forward().
  std::vector<std::vector<int32_t>> hist = {{1}, {1}};
  std::vector<int64_t> srcs = {0, 1};
  auto step_and_check = [&](const std::vector<int32_t>& tok, const char* what) {
    Tensor logits =
        m.step(st, Tensor::from_vector<int32_t>({static_cast<int64_t>(tok.size())}, tok));
    for (size_t r = 0; r < tok.size(); ++r) {
      std::vector<int32_t> prefix = hist[r];
      Tensor s1 = narrow(src, 0, srcs[r], 1).contiguous();
      Tensor t1 = Tensor::from_vector<int32_t>({1, static_cast<int64_t>(prefix.size())}, prefix);
      Tensor full = m.forward(s1, t1);  // (1, T, V)
      Tensor ref = narrow(full, 1, full.size(1) - 1, 1).contiguous().reshape({1, c.trg_vocab_size});
      EXPECT_LE(testing::scaled_error(narrow(logits, 0, r, 1).contiguous(), ref), 1e-5)
          << what << " row " << r;
    }
  };
  step_and_check({1, 1}, "first step");
  auto reorder = [&](const std::vector<int64_t>& rows, const std::vector<int32_t>& next) {
    st.reorder(rows);
    std::vector<std::vector<int32_t>> h;
    std::vector<int64_t> s;
    for (size_t i = 0; i < rows.size(); ++i) {
      h.push_back(hist[rows[i]]);
      h.back().push_back(next[i]);
      s.push_back(srcs[rows[i]]);
    }
    hist = h;
    srcs = s;
  };
  reorder({0, 0, 1, 1}, {4, 5, 6, 7});  // two beams a source
  const void* cross_k = st.layers[0].cross.k.storage().get();
  step_and_check({4, 5, 6, 7}, "after expanding");
  reorder({1, 0, 3, 3}, {8, 9, 10, 11});  // beams swap within their source
  EXPECT_EQ(st.layers[0].cross.k.storage().get(), cross_k) << "cross caches were copied";
  step_and_check({8, 9, 10, 11}, "after a reorder within sources");
  reorder({2, 3}, {12, 13});  // source 0 finished
  step_and_check({12, 13}, "after dropping a source");
}

// Greedy-style and beam-style decode steps in steady state reuse the allocator's cached blocks:
// no block of a new size is asked for, so nothing reaches the system allocator (the steps fit
// the caches' first allocation: growing them is an allocation, GrowsByDoubling... above).
TEST(KVCache, SteadyStateDecodingTakesNoNewMemory) {
  const ModelConfig c = small_model();
  Transformer m(c, 4);
  NoGradGuard ng;
  const int64_t B = 4, steps = nn::KVCache::kFirstPositions;
  Tensor src = testing::random_ids({B, 7}, c.src_vocab_size - 3, 11);
  for (int64_t i = 0; i < src.numel(); ++i) src.data<int32_t>()[i] += 3;
  for (bool beam : {false, true}) {
    DecoderState st = m.start(src);
    st.reserve = steps;
    uint64_t allocs_after_warmup = 0;
    for (int64_t t = 0; t < steps; ++t) {
      if (t == 4) allocs_after_warmup = cpu_allocator().stats().system_allocs;
      std::vector<int32_t> tok(B, static_cast<int32_t>(3 + t % 10));
      Tensor logits = m.step(st, Tensor::from_vector<int32_t>({B}, tok));
      if (beam) st.reorder({1, 0, 3, static_cast<int64_t>(t % B)});
    }
    EXPECT_EQ(cpu_allocator().stats().system_allocs, allocs_after_warmup)
        << (beam ? "beam" : "greedy") << " steps allocated";
  }
}

}  // namespace
}  // namespace tfm
