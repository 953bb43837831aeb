// A fixed set of worker threads running jobs from one queue: the Translator's inter_threads.
// Each worker sets its own OpenMP thread count once (intra_threads), so the batches running at
// the same time do not oversubscribe the cores, and the callers' threads keep their settings.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace tfm::runtime {

class WorkerPool {
 public:
  WorkerPool(int workers, int intra_threads);
  ~WorkerPool();  // finishes the queued jobs, then joins
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `job`; the future rethrows what it threw.
  std::future<void> submit(std::function<void()> job);
  int workers() const { return static_cast<int>(threads_.size()); }

 private:
  void work(int intra_threads);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;
  bool closing_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tfm::runtime
