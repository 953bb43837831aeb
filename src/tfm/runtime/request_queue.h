// The Translator's request queue: every search, synchronous or not, from any number of callers,
// goes through one queue, and dispatcher threads (one per inter_thread) form the batches. A
// request is one caller's sentences (prepared: checked and cut) with one search; its results
// come back through a Pending, in input order.
//
// How requests share batches (Batching in translator.h):
// - own: a request's sentences are sorted and cut among themselves, as translate_batch always
//   did, so its results are those bits. Own requests with equal search options queued at the same
//   time are decoded in one pass (each still batched alone, its batches' shards pooled), which is
//   how a stream keeps the threads busy across its windows.
// - shared: sentences of any shared requests with equal search options are sorted and cut
//   together (a server's requests), once max_batch_tokens source tokens wait or the oldest has
//   waited max_batch_delay_ms. Sampling requests are always own: their random streams are keyed
//   by each sentence's place in its request.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tfm/decode/search.h"
#include "tfm/model/transformer.h"
#include "tfm/runtime/worker_pool.h"
#include "tfm/translator.h"

namespace tfm::runtime {

using Clock = std::chrono::steady_clock;

// One caller's sentences and their search. sources: ids without BOS/EOS, checked and cut to the
// model's positions (all empty for a decoder-only model, whose prompts are the prefixes).
// prefixes: one per source, or none. keys: each sentence's random-stream key (empty: its index).
struct Request {
  std::vector<Ids> sources;
  std::vector<Ids> prefixes;
  std::vector<uint64_t> keys;
  decode::SearchOptions search;
  bool own = true;  // batched among its own sentences only (see above)
};

// A request's results as they arrive. Thread-safe.
class Pending {
 public:
  explicit Pending(size_t sentences) : results_(sentences), done_(sentences, 0) {}

  bool ready() const;
  // Waits until every result is in (or until `deadline`: false when it passed first).
  void wait() const;
  bool wait_until(Clock::time_point deadline) const;
  // Whether sentence i's result is in (or the request failed).
  bool has(size_t i) const;
  // Waits until sentence i's result is in (or the request failed or was cancelled); true when
  // it is there.
  bool wait_for(size_t i) const;
  // The results, once ready: moved out; rethrows the search's error, or a tfm::Error once
  // cancelled.
  std::vector<decode::NBest> take();
  // Sentence i's result once wait_for(i) returned: moved out; rethrows the search's error, or a
  // tfm::Error once cancelled.
  decode::NBest take(size_t i);
  // Gives up: the queue drops the sentences not yet in a batch and frees the request's slot.
  void cancel();
  bool cancelled() const { return cancelled_.load(); }

 private:
  friend class RequestQueue;
  // Delivers sentence i (the queue, from the thread that decoded it); true when it completed
  // the request.
  bool deliver(size_t i, decode::NBest&& result);
  // The queue failed these sentences; true when it completed the request.
  bool fail(const std::vector<size_t>& which, const std::exception_ptr& error);

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<decode::NBest> results_;
  std::vector<char> done_;
  size_t remaining_ = 0;
  std::exception_ptr error_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> released_{false};  // its admission slot given back (once)
  std::function<void()> release_;      // gives it back
};

class RequestQueue {
 public:
  // `model` and `pool` must outlive the queue. options: the batching limits, the delay and the
  // admission limit (TranslatorOptions' fields); inter_threads dispatchers.
  RequestQueue(const Transformer& model, WorkerPool& pool, const TranslatorOptions& options);
  ~RequestQueue();  // stop()
  RequestQueue(const RequestQueue&) = delete;
  RequestQueue& operator=(const RequestQueue&) = delete;

  // Queues the request; its empty sources are done at once (no search). refusable: a
  // tfm::QueueFull when max_queued_requests requests are admitted already (a synchronous caller
  // is never refused: it waits for its results anyway).
  std::shared_ptr<Pending> submit(Request request, bool refusable);
  // From now on shared batches form without waiting for company (a drain before shutdown).
  void flush();
  // Decodes everything queued, then joins the dispatchers. Idempotent.
  void stop();

  QueueStats stats() const;

 private:
  struct Item {
    std::shared_ptr<Pending> pending;
    std::shared_ptr<const Request> request;
    size_t index;
    int64_t tokens;
    Clock::time_point enqueued;
  };
  // A batch group: items, and where each request's own sort group starts.
  struct Group {
    std::vector<Item> items;
    std::vector<size_t> starts;
  };
  void dispatch();
  void drop_cancelled_locked();
  bool ready_locked(const Request& first) const;
  std::optional<size_t> next_locked(bool waited) const;
  Group take_group_locked(size_t head);
  void run_group(Group& group);

  const Transformer& model_;
  WorkerPool& pool_;
  TranslatorOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  std::atomic<size_t> admitted_{0};
  bool flushing_ = false;
  bool stopping_ = false;
  std::vector<std::thread> dispatchers_;
};

}  // namespace tfm::runtime
