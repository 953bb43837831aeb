#include "tfm/serve/http_workers.h"

#include <unistd.h>

#include <cstdint>
#include <exception>

namespace tfm::serve {

HttpWorkers::HttpWorkers(size_t threads, Run run, int wake_fd)
    : run_(std::move(run)), wake_fd_(wake_fd) {
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

HttpWorkers::~HttpWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void HttpWorkers::post(HttpJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    todo_.push_back(std::move(job));
    ++posted_;
  }
  cv_.notify_one();
}

std::vector<HttpJob> HttpWorkers::take_done() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<HttpJob> out;
  out.swap(done_);
  taken_ += out.size();
  return out;
}

size_t HttpWorkers::busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return posted_ - taken_;
}

void HttpWorkers::work() {
  for (;;) {
    HttpJob job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !todo_.empty(); });
      if (todo_.empty()) return;
      job = std::move(todo_.front());
      todo_.pop_front();
    }
    // A job whose client left before it started is not run; the log and the metrics count it
    // as a client gone (499), as they do a request cancelled while it ran (not as a 200).
    if (job.request.gone && job.request.gone->load())
      job.response.status = 499;
    else
      job.response = run_(job.request);
    // The body is not needed for the log: its memory goes back now.
    std::string().swap(job.request.body);
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_.push_back(std::move(job));
    }
    const uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
}

}  // namespace tfm::serve
