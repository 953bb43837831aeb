#include "tfm/runtime/request_queue.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "tfm/core/check.h"
#include "tfm/runtime/batch_search.h"

namespace tfm::runtime {

namespace {

// Own requests decoded in one pass at most: a stream keeps up to this many windows queued.
constexpr size_t kMaxPooledRequests = 8;

}  // namespace

// ---------------------------------------------------------------------------------- Pending

bool Pending::ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return remaining_ == 0;
}

void Pending::wait() const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return remaining_ == 0 || cancelled_; });
}

bool Pending::wait_until(Clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [this] { return remaining_ == 0 || cancelled_; });
}

bool Pending::has(size_t i) const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_[i] || error_;
}

bool Pending::wait_for(size_t i) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_[i] || error_ || cancelled_; });
  return done_[i] && !error_ && !cancelled_;
}

std::vector<decode::NBest> Pending::take() {
  wait();
  std::lock_guard<std::mutex> lock(mu_);
  TFM_CHECK(!cancelled_) << "the translation was cancelled";
  if (error_) std::rethrow_exception(error_);
  return std::move(results_);
}

decode::NBest Pending::take(size_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  TFM_CHECK(!cancelled_) << "the translation was cancelled";
  if (error_) std::rethrow_exception(error_);
  return std::move(results_[i]);
}

void Pending::cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
  if (!released_.exchange(true) && release_) release_();
}

// The slot is given back before the waiters wake: a caller that has its results sees the queue
// without its request.
bool Pending::deliver(size_t i, decode::NBest&& result) {
  bool last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    results_[i] = std::move(result);
    done_[i] = 1;
    last = --remaining_ == 0;
    if (last && !released_.exchange(true) && release_) release_();
  }
  cv_.notify_all();
  return last;
}

bool Pending::fail(const std::vector<size_t>& which, const std::exception_ptr& error) {
  bool last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_) error_ = error;
    for (size_t i : which) done_[i] = 1;
    remaining_ -= which.size();
    last = remaining_ == 0;
    if (last && !released_.exchange(true) && release_) release_();
  }
  cv_.notify_all();
  return last;
}

// ----------------------------------------------------------------------------- RequestQueue

RequestQueue::RequestQueue(const Transformer& model, WorkerPool& pool,
                           const TranslatorOptions& options)
    : model_(model), pool_(pool), options_(options) {
  for (int i = 0; i < options.inter_threads; ++i) dispatchers_.emplace_back([this] { dispatch(); });
}

RequestQueue::~RequestQueue() {
  stop();
}

std::shared_ptr<Pending> RequestQueue::submit(Request request, bool refusable) {
  const size_t n = request.sources.size();
  TFM_CHECK(request.prefixes.empty() || request.prefixes.size() == n)
      << "queue: " << request.prefixes.size() << " prefixes for " << n << " sources";
  if (request.search.sampling) request.own = true;  // keyed by place in the call
  auto pending = std::make_shared<Pending>(n);
  auto shared = std::make_shared<const Request>(std::move(request));
  const Request& r = *shared;
  // An empty source has no translation; a decoder-only model's sources are all empty and its
  // prompts (the prefixes) are what it continues.
  const bool prompts = !model_.config().has_encoder();
  std::vector<Item> items;
  const auto now = Clock::now();
  for (size_t i = 0; i < n; ++i) {
    if (!prompts && r.sources[i].empty()) continue;
    const size_t tokens =
        prompts ? (r.prefixes.empty() ? 0 : r.prefixes[i].size()) + 1 : r.sources[i].size();
    items.push_back({pending, shared, i, static_cast<int64_t>(tokens), now});
  }
  pending->remaining_ = items.size();
  for (size_t i = 0; i < n; ++i) pending->done_[i] = 1;
  for (const Item& it : items) pending->done_[it.index] = 0;
  if (items.empty()) {
    pending->released_ = true;
    return pending;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    TFM_CHECK(!stopping_) << "the translator is shutting down";
    if (refusable && options_.max_queued_requests != 0 &&
        admitted_.load() >= static_cast<size_t>(options_.max_queued_requests))
      throw QueueFull("the queue is full (" + std::to_string(options_.max_queued_requests) +
                      " requests): retry later");
    ++admitted_;
    pending->release_ = [this] { --admitted_; };
    for (Item& it : items) queue_.push_back(std::move(it));
  }
  cv_.notify_all();
  return pending;
}

void RequestQueue::flush() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    flushing_ = true;
  }
  cv_.notify_all();
}

void RequestQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && dispatchers_.empty()) return;
    stopping_ = true;
    flushing_ = true;
  }
  cv_.notify_all();
  for (auto& t : dispatchers_) t.join();
  dispatchers_.clear();
}

QueueStats RequestQueue::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {queue_.size(), admitted_.load()};
}

void RequestQueue::drop_cancelled_locked() {
  std::erase_if(queue_, [](const Item& it) { return it.pending->cancelled(); });
}

// A shared request is ready once a full batch of its search waits: max_batch_tokens source
// tokens, or max_batch_size sentences when there is no token limit.
bool RequestQueue::ready_locked(const Request& first) const {
  int64_t tokens = 0, sentences = 0;
  for (const Item& it : queue_) {
    if (it.request->own || !(it.request->search == first.search)) continue;
    tokens += it.tokens;
    ++sentences;
    if (options_.max_batch_tokens != 0 ? tokens >= options_.max_batch_tokens
                                       : sentences >= options_.max_batch_size)
      return true;
  }
  return false;
}

// Where the next group starts: the front, unless it is a shared request still waiting for
// company, in which case the first own request (which waits for nobody), if any.
std::optional<size_t> RequestQueue::next_locked(bool waited) const {
  const Request& front = *queue_.front().request;
  if (front.own || waited || flushing_ || ready_locked(front)) return 0;
  for (size_t i = 1; i < queue_.size(); ++i)
    if (queue_[i].request->own) return i;
  return std::nullopt;
}

// The group that starts at queue_[head], in queue order. Own: that request and the own requests
// of its search queued now (up to kMaxPooledRequests), each a sort group of its own. Shared:
// every shared sentence of its search that still fits the token budget (the first always goes),
// one sort group.
RequestQueue::Group RequestQueue::take_group_locked(size_t head) {
  Group g;
  std::deque<Item> rest;
  const std::shared_ptr<const Request> first = queue_[head].request;
  const bool own = first->own;
  int64_t tokens = 0;
  size_t requests = 0;
  const Request* last = nullptr;
  for (size_t i = 0; i < queue_.size(); ++i) {
    Item& it = queue_[i];
    const Request& r = *it.request;
    bool take = i >= head && r.own == own && r.search == first->search;
    if (take && own && &r != last) take = requests < kMaxPooledRequests;
    if (take && !own)
      take = g.items.empty() || options_.max_batch_tokens == 0 ||
             tokens + it.tokens <= options_.max_batch_tokens;
    if (!take) {
      rest.push_back(std::move(it));
      continue;
    }
    if (own && &r != last) {
      g.starts.push_back(g.items.size());
      ++requests;
      last = &r;
    }
    tokens += it.tokens;
    g.items.push_back(std::move(it));
  }
  queue_.swap(rest);
  return g;
}

void RequestQueue::dispatch() {
  const auto delay = std::chrono::milliseconds(options_.max_batch_delay_ms);
  for (;;) {
    Group group;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      drop_cancelled_locked();
      if (queue_.empty()) {
        if (stopping_) return;
        continue;
      }
      // A shared request waits for company: until a full batch waits, the oldest sentence has
      // waited the delay, or the queue drains; own requests behind it go meanwhile. Another
      // dispatcher may take the queue while this one waits.
      std::optional<size_t> head = next_locked(false);
      if (!head) {
        const auto deadline = queue_.front().enqueued + delay;
        const bool waited = !cv_.wait_until(
            lock, deadline, [this] { return queue_.empty() || next_locked(false).has_value(); });
        drop_cancelled_locked();
        if (queue_.empty()) continue;
        head = next_locked(waited);
        if (!head) continue;
      }
      group = take_group_locked(*head);
    }
    run_group(group);
  }
}

void RequestQueue::run_group(Group& group) {
  const auto start = Clock::now();
  std::vector<Ids> sources, prefixes;
  std::vector<uint64_t> keys;
  bool prefixed = false;
  BatchStats stats;
  for (const Item& it : group.items) {
    const Request& r = *it.request;
    sources.push_back(r.sources[it.index]);
    keys.push_back(r.keys.empty() ? it.index : r.keys[it.index]);
    prefixes.push_back(r.prefixes.empty() ? Ids{} : r.prefixes[it.index]);
    prefixed = prefixed || !prefixes.back().empty();
    stats.source_tokens += it.tokens;
  }
  if (!prefixed) prefixes.clear();
  decode::SearchOptions so = group.items.front().request->search;
  // A device runs one search at a time on its stream: no shards on host threads.
  if (options_.device != Device::cpu) so.shard_size = 0;
  std::mutex mu;  // the delivered flags and the counts, from the threads that decode
  std::vector<char> delivered(group.items.size(), 0);
  try {
    const auto search = decode::make_search(so);
    const BatchLimits limits{options_.max_batch_size, options_.max_batch_tokens};
    search_in_batches(
        model_, *search, sources, keys, prefixes, limits, &pool_,
        [&](const std::vector<size_t>& where, std::vector<decode::NBest>& r) {
          for (size_t k = 0; k < where.size(); ++k) {
            const Item& it = group.items[where[k]];
            {
              std::lock_guard<std::mutex> lock(mu);
              delivered[where[k]] = 1;
              if (!r[k].empty()) stats.target_tokens += static_cast<int64_t>(r[k][0].tokens.size());
            }
            it.pending->deliver(it.index, std::move(r[k]));
          }
        },
        group.starts,
        // A cancelled call's sentences still waiting in this group are not decoded: Ctrl-C in
        // Python, or a server's timeout, frees the workers for the calls behind it.
        [&](size_t i) { return group.items[i].pending->cancelled(); });
  } catch (...) {
    const std::exception_ptr error = std::current_exception();
    for (size_t k = 0; k < group.items.size(); ++k)
      if (!delivered[k]) group.items[k].pending->fail({group.items[k].index}, error);
  }
  stats.sentences = group.items.size();
  stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (options_.on_batch) options_.on_batch(stats);
}

}  // namespace tfm::runtime
