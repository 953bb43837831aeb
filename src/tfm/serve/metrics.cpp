#include "tfm/serve/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tfm::serve {

namespace {

constexpr std::chrono::seconds kRateWindow{10};

// Prometheus' float form: the shortest digits that read back as the same double (0.005, not
// 0.0050000000000000001), integers without a fraction.
std::string number(double v) {
  char buf[48];
  int digits = 1;
  for (; digits < 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  // Whole numbers below 1e21 in full (10, not 1e+01), as Go's and Python's clients print them.
  const double magnitude = std::fabs(v);
  if (magnitude >= 1 && magnitude < 1e21)
    digits = std::max(digits, static_cast<int>(std::floor(std::log10(magnitude))) + 1);
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void sample(std::string& out, const std::string& name, double v) {
  out.append(name).append(" ").append(number(v)).append("\n");
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1) {}

void Histogram::observe(double value) {
  const auto at = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[static_cast<size_t>(at)];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    sample(out, name + "_bucket{le=\"" + le + "\"}", static_cast<double>(cumulative));
  }
  sample(out, name + "_sum", sum_);
  sample(out, name + "_count", static_cast<double>(count_));
}

Metrics::Metrics()
    : start_(Clock::now()),
      latency_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      batch_sentences_({1, 2, 4, 8, 16, 32, 64, 128, 256, 512}),
      batch_tokens_({16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}) {}

void Metrics::record_request(int status, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_by_status_[status];
  latency_.observe(seconds);
}

void Metrics::record_batch(size_t sentences, int64_t source_tokens, int64_t target_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  ++batches_;
  batch_sentences_.observe(static_cast<double>(sentences));
  batch_tokens_.observe(static_cast<double>(source_tokens));
  source_tokens_ += source_tokens;
  target_tokens_ += target_tokens;
  const auto now = Clock::now();
  recent_.emplace_back(now, target_tokens);
  while (!recent_.empty() && now - recent_.front().first > kRateWindow) recent_.pop_front();
}

// Target tokens over the last window (or the uptime, when shorter), per second.
double Metrics::tokens_per_second_locked(Clock::time_point now) const {
  int64_t tokens = 0;
  for (const auto& [when, n] : recent_)
    if (now - when <= kRateWindow) tokens += n;
  const double window = std::min(std::chrono::duration<double>(kRateWindow).count(),
                                 std::chrono::duration<double>(now - start_).count());
  return window > 0 ? static_cast<double>(tokens) / window : 0.0;
}

std::string Metrics::render(size_t queued_sentences, size_t requests_in_flight) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  header(out, "tfm_serve_requests_total", "counter", "HTTP requests answered, by status code.");
  for (const auto& [status, n] : requests_by_status_)
    sample(out, "tfm_serve_requests_total{code=\"" + std::to_string(status) + "\"}",
           static_cast<double>(n));
  header(out, "tfm_serve_request_duration_seconds", "histogram",
         "Time from a request's arrival to its answer.");
  latency_.render(out, "tfm_serve_request_duration_seconds");
  header(out, "tfm_serve_queue_sentences", "gauge", "Sentences waiting for a batch.");
  sample(out, "tfm_serve_queue_sentences", static_cast<double>(queued_sentences));
  header(out, "tfm_serve_requests_in_flight", "gauge",
         "Translation requests admitted (waiting or being translated); --max-queue bounds it.");
  sample(out, "tfm_serve_requests_in_flight", static_cast<double>(requests_in_flight));
  header(out, "tfm_serve_batch_sentences", "histogram", "Sentences per batch.");
  batch_sentences_.render(out, "tfm_serve_batch_sentences");
  header(out, "tfm_serve_batch_tokens", "histogram", "Source tokens per batch.");
  batch_tokens_.render(out, "tfm_serve_batch_tokens");
  header(out, "tfm_serve_source_tokens_total", "counter", "Source tokens translated.");
  sample(out, "tfm_serve_source_tokens_total", static_cast<double>(source_tokens_));
  header(out, "tfm_serve_target_tokens_total", "counter",
         "Target tokens generated (best hypotheses).");
  sample(out, "tfm_serve_target_tokens_total", static_cast<double>(target_tokens_));
  header(out, "tfm_serve_tokens_per_second", "gauge",
         "Target tokens generated per second over the last 10 s.");
  sample(out, "tfm_serve_tokens_per_second", tokens_per_second_locked(Clock::now()));
  return out;
}

}  // namespace tfm::serve
