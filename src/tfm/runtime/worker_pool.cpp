#include "tfm/runtime/worker_pool.h"

#include "tfm/core/check.h"
#include "tfm/core/parallel.h"

namespace tfm::runtime {

WorkerPool::WorkerPool(int workers, int intra_threads) {
  TFM_CHECK(workers >= 1) << "inter_threads must be at least 1 (got " << workers << ")";
  threads_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i)
    threads_.emplace_back([this, intra_threads] { work(intra_threads); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

std::future<void> WorkerPool::submit(std::function<void()> job) {
  std::packaged_task<void()> task(std::move(job));
  std::future<void> done = task.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return done;
}

void WorkerPool::work(int intra_threads) {
  set_threads(intra_threads);  // this thread's OpenMP team size, for every job it runs
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing, and nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace tfm::runtime
