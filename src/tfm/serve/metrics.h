// The server's Prometheus metrics (text exposition format 0.0.4): requests by status code, a
// latency histogram, the queue, batch sizes in sentences and tokens, and token throughput.
// Every method is thread-safe; render() is what GET /metrics answers.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tfm::serve {

// A cumulative histogram over fixed upper bounds (the +Inf bucket added).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // The _bucket, _sum and _count lines of `name` (HELP and TYPE are the caller's).
  void render(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last one is +Inf
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  void record_request(int status, double seconds);
  void record_batch(size_t sentences, int64_t source_tokens, int64_t target_tokens);
  // The whole exposition; the gauges of the queue are read by the caller at scrape time.
  std::string render(size_t queued_sentences, size_t requests_in_flight) const;

 private:
  using Clock = std::chrono::steady_clock;
  double tokens_per_second_locked(Clock::time_point now) const;

  mutable std::mutex mu_;
  Clock::time_point start_;
  std::map<int, uint64_t> requests_by_status_;
  Histogram latency_;
  Histogram batch_sentences_;
  Histogram batch_tokens_;
  uint64_t batches_ = 0;
  int64_t source_tokens_ = 0, target_tokens_ = 0;
  // Target tokens of the batches of the last kRateWindow, for the tokens/s gauge.
  std::deque<std::pair<Clock::time_point, int64_t>> recent_;
};

}  // namespace tfm::serve
