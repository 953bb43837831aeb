// The server's dynamic batcher: the sentences of concurrent requests wait in one queue, and a
// batcher thread (one per Translator inter_thread) forms a batch when --max-batch-tokens source
// tokens are waiting or the oldest has waited --max-batch-delay-ms, translates it with one
// Translator::translate_batch call (which sorts it by length and cuts it under the same token
// limit) and hands each request its own results, in order.
//
// Greedy and beam search give a sentence the same result in any batch, so requests share
// batches freely when their search options are equal. A sampling request is batched alone, in
// its own order, because its random streams are keyed by each sentence's index in the call.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tfm/translator.h"

namespace tfm::serve {

using Clock = std::chrono::steady_clock;

struct BatcherOptions {
  int64_t max_batch_tokens = 4096;  // source tokens a batch gathers (and its padded limit)
  int64_t max_batch_delay_ms = 5;   // how long the oldest waiting sentence waits for company
  int64_t max_queue = 128;          // requests admitted at once (waiting or being translated)
  int workers = 1;                  // batches formed and translated at once
};

// One request: its sentences as source ids, its search, and where its results go. prefixes:
// a target prefix per sentence (Translator::translate_batch's target_prefix, checked by the
// caller), or none at all. For a decoder-only model the sources are empty and the prefixes are
// the prompts (Translator::generate_batch's, checked by the caller).
class Job {
 public:
  Job(std::vector<std::vector<int64_t>> sources, const TranslationOptions& options,
      std::vector<std::vector<int64_t>> prefixes = {});

  const std::vector<std::vector<int64_t>>& sources() const { return sources_; }
  const TranslationOptions& options() const { return options_; }
  // Valid once wait_until returned true; empty error: every result is in.
  std::vector<TranslationResult>& results() { return results_; }
  const std::string& error() const { return error_; }

 private:
  friend class Batcher;
  std::vector<std::vector<int64_t>> sources_;
  TranslationOptions options_;
  std::vector<std::vector<int64_t>> prefixes_;  // empty, or one per source
  std::vector<TranslationResult> results_;
  std::string error_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  size_t remaining_ = 0;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> released_{false};  // its admission slot given back (once)
};

// What one batch did, for the metrics.
struct BatchStats {
  size_t sentences = 0;
  int64_t source_tokens = 0;
  int64_t target_tokens = 0;  // of the best hypotheses
  double seconds = 0.0;
};

class Batcher {
 public:
  using OnBatch = std::function<void(const BatchStats&)>;
  // `translator` must outlive the batcher. on_batch runs on a batcher thread after each batch.
  Batcher(const Translator& translator, const BatcherOptions& options, OnBatch on_batch = {});
  ~Batcher();  // stop()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues the job's sentences (at least one); false, and nothing queued, when max_queue
  // requests are already admitted or the batcher is stopping.
  bool submit(const std::shared_ptr<Job>& job);
  // Waits for the job's results until `deadline`; false on timeout, and the job is cancelled:
  // its sentences not yet in a batch are dropped, and its admission slot is given back.
  bool wait_until(const std::shared_ptr<Job>& job, Clock::time_point deadline);
  // From now on batches form without waiting for company (a drain before shutdown).
  void flush_now();
  // Translates everything queued, then joins the batcher threads. Idempotent.
  void stop();

  size_t queued_sentences() const;
  size_t admitted_requests() const;

 private:
  struct Item {
    std::shared_ptr<Job> job;
    size_t index;
    int64_t tokens;
    Clock::time_point enqueued;
  };
  void work();
  void drop_cancelled_locked();
  int64_t ready_tokens_locked() const;
  std::vector<Item> take_batch_locked();
  void run_batch(std::vector<Item>& batch);
  void release(Job& job);

  const Translator& translator_;
  BatcherOptions options_;
  OnBatch on_batch_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  std::atomic<size_t> admitted_{0};
  bool flushing_ = false;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tfm::serve
