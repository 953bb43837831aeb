#include "tfm/data/batcher.h"

#include <gtest/gtest.h>

#include <random>

#include "support/test_util.h"

namespace tfm {
namespace {

// n examples with lengths spread over [1, max_len], source and target loosely correlated, as in
// real parallel text. Token values are the example index, so batches can be traced back.
std::vector<Example> make_examples(int64_t n, int64_t max_len, uint32_t seed = 7) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> len(1, max_len), jitter(-2, 2);
  std::vector<Example> out;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ls = len(rng);
    const int64_t lt = std::max<int64_t>(1, ls + jitter(rng));
    out.push_back(
        {Ids(ls, static_cast<int32_t>(i % 1000 + 3)), Ids(lt, static_cast<int32_t>(i % 1000 + 3))});
  }
  return out;
}

BatcherOptions opts(int64_t tokens, uint64_t seed = 1) {
  BatcherOptions o;
  o.batch_tokens = tokens;
  o.seed = seed;
  return o;
}

// Every index in [0, n) exactly once.
::testing::AssertionResult each_once(const std::vector<std::vector<int64_t>>& batches, int64_t n) {
  std::vector<int> seen(static_cast<size_t>(n), 0);
  for (const auto& b : batches) {
    if (b.empty()) return ::testing::AssertionFailure() << "empty batch";
    for (int64_t i : b) {
      if (i < 0 || i >= n) return ::testing::AssertionFailure() << "index " << i;
      ++seen[static_cast<size_t>(i)];
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if (seen[static_cast<size_t>(i)] != 1) {
      return ::testing::AssertionFailure() << "example " << i << " seen " << seen[i] << " times";
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(Batcher, BudgetHeldAndEveryExampleOncePerEpoch) {
  const int64_t n = 3000;
  Batcher b(make_examples(n, 40), opts(600));
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    const auto plan = b.plan(epoch);
    EXPECT_TRUE(each_once(plan, n)) << "epoch " << epoch;
    for (const auto& batch : plan) EXPECT_LE(b.cost(batch), 600);
  }
}

TEST(Batcher, CostMatchesTheBatchTensors) {
  Batcher b(make_examples(200, 30), opts(500));
  for (const auto& batch : b.plan(0)) {
    const Batch t = b.make(batch);
    EXPECT_EQ(b.cost(batch), t.src.numel() + t.trg_in.numel());
    EXPECT_EQ(t.src.shape()[0], static_cast<int64_t>(batch.size()));
  }
}

TEST(Batcher, OverBudgetExampleGetsABatchOfItsOwn) {
  std::vector<Example> ex = make_examples(50, 5);
  ex.push_back({Ids(100, 5), Ids(90, 5)});  // costs 101 + 91 = 192 > 64
  const auto big = static_cast<int64_t>(ex.size()) - 1;
  Batcher b(std::move(ex), opts(64));
  const auto plan = b.plan(0);
  EXPECT_TRUE(each_once(plan, big + 1));
  int found = 0;
  for (const auto& batch : plan) {
    if (std::find(batch.begin(), batch.end(), big) != batch.end()) {
      ++found;
      EXPECT_EQ(batch.size(), 1u);
    } else {
      EXPECT_LE(b.cost(batch), 64);
    }
  }
  EXPECT_EQ(found, 1);
}

TEST(Batcher, MaxSentencesCaps) {
  BatcherOptions o = opts(100000);
  o.max_sentences = 7;
  Batcher b(make_examples(100, 10), o);
  const auto plan = b.plan(0);
  EXPECT_TRUE(each_once(plan, 100));
  for (const auto& batch : plan) EXPECT_LE(batch.size(), 7u);
  EXPECT_EQ(plan.size(), 15u);  // ceil(100 / 7): the budget never binds
}

TEST(Batcher, ReproduciblePerSeedDifferentAcrossSeedsAndEpochs) {
  const auto ex = make_examples(1000, 30);
  Batcher a(ex, opts(400, 11)), a2(ex, opts(400, 11)), c(ex, opts(400, 12));
  EXPECT_EQ(a.plan(0), a2.plan(0));
  EXPECT_EQ(a.plan(3), a2.plan(3));
  EXPECT_NE(a.plan(0), c.plan(0));
  EXPECT_NE(a.plan(0), a.plan(1));
  // The tensors follow the plan.
  const Batch x = a.next(), y = a2.next();
  EXPECT_TRUE(testing::bitwise_equal(x.src, y.src));
  EXPECT_TRUE(testing::bitwise_equal(x.trg_out, y.trg_out));
}

TEST(Batcher, BucketingReducesPadding) {
  const auto ex = make_examples(5000, 60);
  BatcherOptions sorted = opts(2000), unsorted = opts(2000);
  unsorted.bucket_batches = 0;
  Batcher bs(ex, sorted), bu(ex, unsorted);
  const double ps = padding_ratio(bs, bs.plan(0)), pu = padding_ratio(bu, bu.plan(0));
  EXPECT_LT(ps, 0.15) << "bucketed padding " << ps;
  EXPECT_GT(pu, 0.3) << "unsorted padding " << pu;
  EXPECT_LT(ps, pu / 3);
  // Fewer, fuller batches for the same data.
  EXPECT_LT(bs.plan(0).size(), bu.plan(0).size());
  EXPECT_TRUE(each_once(bu.plan(0), 5000));
}

TEST(Batcher, NoShuffleKeepsCorpusOrder) {
  BatcherOptions o = opts(50);
  o.shuffle = false;
  o.bucket_batches = 0;
  Batcher b(make_examples(40, 4), o);
  std::vector<int64_t> flat;
  for (const auto& batch : b.plan(0)) flat.insert(flat.end(), batch.begin(), batch.end());
  std::vector<int64_t> want(40);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(flat, want);
  EXPECT_EQ(b.plan(0), b.plan(5));
}

TEST(Batcher, NextWalksEpochsAndResumeContinuesIdentically) {
  const auto ex = make_examples(300, 20);
  Batcher run(ex, opts(200, 5));
  const int64_t e0 = run.batches_in_epoch(0);
  ASSERT_GT(e0, 3);
  // Walk through epoch 0 into epoch 1, remembering the example lists.
  std::vector<std::vector<int64_t>> seen;
  for (int64_t k = 0; k < e0 + 5; ++k) {
    seen.push_back(run.peek());
    run.next();
  }
  EXPECT_EQ(run.position(), (BatchPosition{1, 5}));
  std::vector<std::vector<int64_t>> want = run.plan(0);
  const auto p1 = run.plan(1);
  want.insert(want.end(), p1.begin(), p1.begin() + 5);
  EXPECT_EQ(seen, want);

  // Save a position mid-epoch, run on, and resume a fresh batcher from it.
  const BatchPosition saved{0, e0 - 2};
  Batcher a(ex, opts(200, 5)), resumed(ex, opts(200, 5));
  a.seek(saved);
  std::vector<Batch> rest_a;
  for (int k = 0; k < 6; ++k) rest_a.push_back(a.next());
  resumed.seek(saved);
  for (int k = 0; k < 6; ++k) {
    const Batch r = resumed.next();
    EXPECT_TRUE(testing::bitwise_equal(r.src, rest_a[k].src)) << k;
    EXPECT_TRUE(testing::bitwise_equal(r.trg_in, rest_a[k].trg_in)) << k;
  }
  EXPECT_EQ(a.position(), resumed.position());
  EXPECT_EQ(a.position().epoch, 1);

  // The end of an epoch is the start of the next; beyond it is an error.
  Batcher b(ex, opts(200, 5));
  b.seek({0, e0});
  EXPECT_EQ(b.position(), (BatchPosition{1, 0}));
  EXPECT_TFM_ERROR(b.seek({0, e0 + 1}), "past the epoch");
}

TEST(Batcher, FingerprintTracksDataAndOptions) {
  const auto ex = make_examples(100, 10);
  const uint64_t f = Batcher(ex, opts(100, 1)).fingerprint();
  EXPECT_EQ(Batcher(ex, opts(100, 1)).fingerprint(), f);
  EXPECT_NE(Batcher(ex, opts(100, 2)).fingerprint(), f);
  EXPECT_NE(Batcher(ex, opts(101, 1)).fingerprint(), f);
  auto changed = ex;
  changed[50].trg[0] += 1;
  EXPECT_NE(Batcher(changed, opts(100, 1)).fingerprint(), f);
  auto fewer = ex;
  fewer.pop_back();
  EXPECT_NE(Batcher(fewer, opts(100, 1)).fingerprint(), f);
}

// The source framing enters the fingerprint only when it is not the default, so a training state
// saved before the framing was an option (the literal: the fingerprint as that code computed it)
// still resumes; another framing changes batch costs and so the fingerprint.
TEST(Batcher, FingerprintOfTheDefaultFramingIsUnchangedAndOthersDiffer) {
  const std::vector<Example> ex = {{{3, 4}, {5}}, {{6}, {7, 8, 9}}};
  EXPECT_EQ(Batcher(ex, opts(100, 1)).fingerprint(), 0x9f116d5c0abcb341ull);
  std::vector<uint64_t> seen = {Batcher(ex, opts(100, 1)).fingerprint()};
  for (auto [bos, eos] : {std::pair{true, true}, {true, false}, {false, false}}) {
    BatcherOptions o = opts(100, 1);
    o.format.source_bos = bos, o.format.source_eos = eos;
    const uint64_t f = Batcher(ex, o).fingerprint();
    for (uint64_t g : seen) EXPECT_NE(f, g) << "bos " << bos << " eos " << eos;
    seen.push_back(f);
  }
}

// The budget rule counts the framing: a source costs its tokens + the BOS/EOS the format adds.
TEST(Batcher, CostCountsTheSourceFraming) {
  for (auto [bos, eos] : {std::pair{false, true}, {true, true}, {true, false}, {false, false}}) {
    BatcherOptions o = opts(400);
    o.format.source_bos = bos, o.format.source_eos = eos;
    Batcher b(make_examples(100, 20), o);
    for (const auto& batch : b.plan(0)) {
      const Batch t = b.make(batch);
      EXPECT_EQ(b.cost(batch), t.src.numel() + t.trg_in.numel()) << bos << eos;
      EXPECT_LE(b.cost(batch), 400);
    }
  }
}

TEST(Batcher, BadOptionsAreErrors) {
  EXPECT_TFM_ERROR(Batcher({}, opts(100)), "no training examples");
  EXPECT_TFM_ERROR(Batcher(make_examples(3, 3), opts(0)), "batch_tokens must be positive");
}

}  // namespace
}  // namespace tfm
