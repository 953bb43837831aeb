// The Translator's asynchronous interface and its request queue: own batching gives
// translate_batch's bits; shared batching gathers many callers' sentences into batches and gives
// their ids (scores to float precision); sampling batches alone whatever is asked; a full queue
// refuses, a cancelled call leaves it, a flush stops the wait for company.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/test_util.h"
#include "tfm/translator.h"

namespace tfm {
namespace {

using Clock = std::chrono::steady_clock;
using IdLists = std::vector<std::vector<int64_t>>;

const std::string kModel = std::string(TFM_FIXTURES_DIR) + "/convert/seed004";
const std::string kLm = std::string(TFM_FIXTURES_DIR) + "/decoder_only_odd";

IdLists sources() {
  std::ifstream in(kModel + "/src.ids");
  IdLists out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream s(line);
    std::vector<int64_t> ids;
    for (int64_t v; s >> v;) ids.push_back(v);
    out.push_back(ids);
  }
  out.push_back({});  // an empty source: done without a search
  return out;
}

void expect_bitwise(const std::vector<TranslationResult>& a,
                    const std::vector<TranslationResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].hypotheses.size(), b[i].hypotheses.size()) << "sentence " << i;
    for (size_t k = 0; k < a[i].hypotheses.size(); ++k) {
      EXPECT_EQ(a[i].hypotheses[k].ids, b[i].hypotheses[k].ids) << "sentence " << i;
      EXPECT_EQ(a[i].hypotheses[k].score, b[i].hypotheses[k].score) << "sentence " << i;
      EXPECT_EQ(a[i].hypotheses[k].log_prob, b[i].hypotheses[k].log_prob) << "sentence " << i;
    }
  }
}

TEST(AsyncTranslation, OwnBatchingIsTranslateBatchBitForBit) {
  Translator t(kModel, {.inter_threads = 2, .max_batch_size = 3});
  const IdLists src = sources();
  const TranslationOptions beam{.search = Search::beam, .beam_size = 3, .num_hypotheses = 2};
  const auto want = t.translate_batch(src, beam);
  AsyncResults a = t.translate_async(src, {}, beam);
  AsyncResults b = t.translate_async(src, {}, beam);  // queued together: pooled, batched alone
  expect_bitwise(want, a.get());
  expect_bitwise(want, b.get());
  EXPECT_THROW(a.get(), Error);  // the results are handed over once
  EXPECT_THROW(AsyncResults().get(), Error);
}

// Many callers, each a few sentences: the queue batches them together (fewer passes than
// sentences), and each gets translate_batch's hypotheses.
TEST(AsyncTranslation, SharedBatchingGathersManyCallers) {
  std::atomic<int> passes{0};
  std::atomic<size_t> sentences{0};
  TranslatorOptions o{.max_batch_size = 8, .max_batch_tokens = 64, .max_batch_delay_ms = 200};
  o.on_batch = [&](const BatchStats& s) {
    ++passes;
    sentences += s.sentences;
  };
  Translator t(kModel, o);
  const IdLists src = sources();
  const auto want = Translator(kModel).translate_batch(src, {});
  constexpr int kCallers = 8;
  std::vector<std::vector<TranslationResult>> got(kCallers);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      const IdLists mine = {src[c % src.size()], src[(c + 3) % src.size()]};
      got[c] = t.translate_async(mine, {}, {}, Batching::shared).get();
    });
  for (auto& th : callers) th.join();
  for (int c = 0; c < kCallers; ++c) {
    const size_t idx[] = {c % src.size(), (c + 3) % src.size()};
    for (size_t k = 0; k < 2; ++k) {
      const auto& w = want[idx[k]].hypotheses;
      const auto& g = got[c][k].hypotheses;
      ASSERT_EQ(g.size(), w.size()) << "caller " << c;
      if (w.empty()) continue;
      EXPECT_EQ(g[0].ids, w[0].ids) << "caller " << c;
      EXPECT_NEAR(g[0].log_prob, w[0].log_prob, 1e-5 * (1 + std::abs(w[0].log_prob)));
    }
  }
  // Each pass reports once it is over, which may be after its callers have their results.
  size_t searched = 0;
  for (int c = 0; c < kCallers; ++c)
    searched += !src[c % src.size()].empty() + !src[(c + 3) % src.size()].empty();
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (sentences.load() < searched && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(sentences.load(), searched);
  EXPECT_LT(passes.load(), static_cast<int>(searched)) << "no pass held two sentences";
  EXPECT_EQ(t.queue_stats().admitted_requests, 0u);
}

TEST(AsyncTranslation, SamplingIsKeyedByPlaceInTheCallAndBatchedAlone) {
  Translator t(kModel, {.max_batch_delay_ms = 50});
  const IdLists src = sources();
  const TranslationOptions sampling{.search = Search::sampling, .sampling_topk = 5, .seed = 3};
  const auto want = t.translate_batch(src, sampling);
  AsyncResults other = t.translate_async(src, {}, {}, Batching::shared);
  AsyncResults shared = t.translate_async(src, {}, sampling, Batching::shared);
  expect_bitwise(want, shared.get());
  other.get();
}

TEST(AsyncTranslation, AFullQueueRefusesAndAFlushStopsTheWait) {
  Translator t(kModel, {.max_batch_delay_ms = 60'000, .max_queued_requests = 1});
  const IdLists src = sources();
  AsyncResults first = t.translate_async({src[0]}, {}, {}, Batching::shared);
  EXPECT_EQ(t.queue_stats().admitted_requests, 1u);
  EXPECT_THROW(t.translate_async({src[1]}, {}, {}, Batching::shared), QueueFull);
  EXPECT_THROW(t.translate_async({src[1]}, {}, {}), QueueFull);
  EXPECT_EQ(t.translate_batch({src[1]}, {}).size(), 1u);  // a synchronous call is never refused
  EXPECT_FALSE(
      first.wait_until(Clock::now() + std::chrono::milliseconds(50)));  // waits for company
  const auto flushed = Clock::now();
  t.flush();
  ASSERT_TRUE(first.wait_until(Clock::now() + std::chrono::seconds(30)));
  EXPECT_LT(Clock::now() - flushed, std::chrono::seconds(20));
  EXPECT_EQ(first.get().size(), 1u);
  EXPECT_EQ(t.queue_stats().admitted_requests, 0u);
}

TEST(AsyncTranslation, ACancelledCallLeavesTheQueue) {
  Translator t(kModel, {.max_batch_delay_ms = 60'000, .max_queued_requests = 1});
  const IdLists src = sources();
  AsyncResults late = t.translate_async({src[0], src[1]}, {}, {}, Batching::shared);
  EXPECT_EQ(t.queue_stats().queued_sentences, 2u);
  late.cancel();
  EXPECT_EQ(t.queue_stats().admitted_requests, 0u);
  EXPECT_TFM_ERROR(late.get(), "cancelled");
  // Its slot is free again, and its sentences are never decoded.
  AsyncResults next = t.translate_async({src[2]}, {}, {}, Batching::shared);
  t.flush();
  EXPECT_EQ(next.get().size(), 1u);
  EXPECT_EQ(t.queue_stats().queued_sentences, 0u);
}

TEST(AsyncTranslation, ChecksFailAtTheCallNotInTheQueue) {
  Translator t(kModel, {.max_queued_requests = 1});
  EXPECT_THROW(t.translate_async(sources(), {}, {.beam_size = 0}), InvalidArgument);
  EXPECT_TFM_ERROR(t.translate_async(IdLists{{4, 99999}}, {}, {}), "outside the source vocabulary");
  EXPECT_EQ(t.queue_stats().admitted_requests, 0u);
  AsyncResults empty = t.translate_async(IdLists{}, {}, {});
  EXPECT_TRUE(empty.ready());
  EXPECT_TRUE(empty.get().empty());
}

TEST(AsyncTranslation, GenerateAsyncIsGenerateBatch) {
  Translator lm(kLm, {.inter_threads = 2, .max_batch_size = 2});
  const IdLists prompts = {{3}, {}, {5, 6, 7}, {4, 4}};
  const TranslationOptions beam{.search = Search::beam, .beam_size = 2, .max_decoding_length = 9};
  const auto want = lm.generate_batch(prompts, beam);
  expect_bitwise(want, lm.generate_async(prompts, beam).get());
  const auto shared = lm.generate_async(prompts, beam, Batching::shared).get();
  ASSERT_EQ(shared.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(shared[i].hypotheses.at(0).ids, want[i].hypotheses.at(0).ids) << "prompt " << i;
}

}  // namespace
}  // namespace tfm
