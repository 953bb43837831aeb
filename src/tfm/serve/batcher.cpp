#include "tfm/serve/batcher.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "tfm/core/check.h"

namespace tfm::serve {

namespace {

// Requests whose sentences may share a translate_batch call: every search option equal, and no
// sampling (see batcher.h).
bool same_search(const TranslationOptions& a, const TranslationOptions& b) {
  return !a.sampling && !b.sampling && a.beam_size == b.beam_size &&
         a.num_hypotheses == b.num_hypotheses && a.length_penalty == b.length_penalty &&
         a.normalize_scores == b.normalize_scores && a.max_length_factor == b.max_length_factor &&
         a.max_length_extra == b.max_length_extra &&
         a.max_decoding_length == b.max_decoding_length &&
         a.min_decoding_length == b.min_decoding_length && a.max_new_tokens == b.max_new_tokens &&
         a.source_lang == b.source_lang && a.target_lang == b.target_lang;
}

}  // namespace

Job::Job(std::vector<std::vector<int64_t>> sources, const TranslationOptions& options,
         std::vector<std::vector<int64_t>> prefixes)
    : sources_(std::move(sources)),
      options_(options),
      prefixes_(std::move(prefixes)),
      results_(sources_.size()) {
  TFM_CHECK(prefixes_.empty() || prefixes_.size() == sources_.size())
      << "batcher: " << prefixes_.size() << " target prefixes for " << sources_.size()
      << " sentences";
}

Batcher::Batcher(const Translator& translator, const BatcherOptions& options, OnBatch on_batch)
    : translator_(translator), options_(options), on_batch_(std::move(on_batch)) {
  TFM_CHECK(options.max_batch_tokens >= 1)
      << "max_batch_tokens must be at least 1 (got " << options.max_batch_tokens << ")";
  TFM_CHECK(options.max_batch_delay_ms >= 0)
      << "max_batch_delay_ms must be at least 0 (got " << options.max_batch_delay_ms << ")";
  TFM_CHECK(options.max_queue >= 1)
      << "max_queue must be at least 1 (got " << options.max_queue << ")";
  TFM_CHECK(options.workers >= 1) << "batcher workers must be at least 1 (got " << options.workers
                                  << ")";
  for (int i = 0; i < options.workers; ++i) threads_.emplace_back([this] { work(); });
}

Batcher::~Batcher() {
  stop();
}

bool Batcher::submit(const std::shared_ptr<Job>& job) {
  TFM_CHECK(!job->sources_.empty()) << "batcher: a job needs at least one sentence";
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || admitted_.load() >= static_cast<size_t>(options_.max_queue)) return false;
    ++admitted_;
    job->remaining_ = job->sources_.size();
    const auto now = Clock::now();
    // A decoder-only model's sentences are their prompts (the sources are empty).
    const bool prompts = translator_.model_info().decoder_only;
    for (size_t i = 0; i < job->sources_.size(); ++i) {
      const size_t tokens = prompts ? job->prefixes_.at(i).size() : job->sources_[i].size();
      queue_.push_back({job, i, static_cast<int64_t>(tokens), now});
    }
  }
  cv_.notify_all();
  return true;
}

bool Batcher::wait_until(const std::shared_ptr<Job>& job, Clock::time_point deadline) {
  {
    std::unique_lock<std::mutex> lock(job->mu_);
    if (job->done_cv_.wait_until(lock, deadline, [&] { return job->remaining_ == 0; })) return true;
  }
  job->cancelled_ = true;
  release(*job);
  return false;
}

void Batcher::release(Job& job) {
  if (!job.released_.exchange(true)) --admitted_;
}

void Batcher::flush_now() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    flushing_ = true;
  }
  cv_.notify_all();
}

void Batcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    flushing_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

size_t Batcher::queued_sentences() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

size_t Batcher::admitted_requests() const {
  return admitted_.load();
}

void Batcher::drop_cancelled_locked() {
  std::erase_if(queue_, [](const Item& it) { return it.job->cancelled_.load(); });
}

// Source tokens waiting that could join a batch opened by the oldest sentence.
int64_t Batcher::ready_tokens_locked() const {
  const Job& first = *queue_.front().job;
  if (first.options_.sampling) return options_.max_batch_tokens;  // batched alone: ready now
  int64_t tokens = 0;
  for (const Item& it : queue_) {
    if (!same_search(first.options_, it.job->options_)) continue;
    tokens += it.tokens;
    if (tokens >= options_.max_batch_tokens) break;
  }
  return tokens;
}

// The oldest sentence and, in queue order, every compatible one that still fits the token
// budget (the oldest always goes, however long). A sampling request goes whole and alone.
std::vector<Batcher::Item> Batcher::take_batch_locked() {
  std::vector<Item> batch;
  std::deque<Item> rest;
  const std::shared_ptr<Job> first = queue_.front().job;
  int64_t tokens = 0;
  for (Item& it : queue_) {
    bool take;
    if (first->options_.sampling)
      take = it.job == first;
    else
      take = same_search(first->options_, it.job->options_) &&
             (batch.empty() || tokens + it.tokens <= options_.max_batch_tokens);
    if (take) {
      tokens += it.tokens;
      batch.push_back(std::move(it));
    } else {
      rest.push_back(std::move(it));
    }
  }
  queue_.swap(rest);
  return batch;
}

void Batcher::work() {
  const auto delay = std::chrono::milliseconds(options_.max_batch_delay_ms);
  for (;;) {
    std::vector<Item> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      drop_cancelled_locked();
      if (queue_.empty()) {
        if (stopping_) return;
        continue;
      }
      // Wait for company: until a full batch is waiting, the oldest sentence has waited the
      // delay, or the server drains. Another worker may take the queue meanwhile.
      const auto deadline = queue_.front().enqueued + delay;
      cv_.wait_until(lock, deadline, [this] {
        return flushing_ || queue_.empty() || ready_tokens_locked() >= options_.max_batch_tokens;
      });
      drop_cancelled_locked();
      if (queue_.empty()) continue;
      batch = take_batch_locked();
    }
    run_batch(batch);
  }
}

void Batcher::run_batch(std::vector<Item>& batch) {
  const auto start = Clock::now();
  std::vector<std::vector<int64_t>> sources, prefixes(batch.size());
  sources.reserve(batch.size());
  BatchStats stats;
  bool prefixed = false;
  for (size_t i = 0; i < batch.size(); ++i) {
    const Item& it = batch[i];
    sources.push_back(it.job->sources_[it.index]);
    stats.source_tokens += it.tokens;
    if (!it.job->prefixes_.empty()) prefixes[i] = it.job->prefixes_[it.index];
    prefixed = prefixed || !prefixes[i].empty();
  }
  std::vector<TranslationResult> results;
  std::string error;
  try {
    // A prefix is per sentence, so sentences with and without one share a batch.
    const TranslationOptions& o = batch.front().job->options_;
    if (translator_.model_info().decoder_only)
      results = translator_.generate_batch(prefixes, o);
    else if (prefixed)
      results = translator_.translate_batch(sources, prefixes, o);
    else
      results = translator_.translate_batch(sources, o);
  } catch (const Error& e) {
    error = e.message();
  } catch (const std::exception& e) {
    error = e.what();
  }
  stats.sentences = batch.size();
  stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (size_t i = 0; i < batch.size(); ++i) {
    Job& job = *batch[i].job;
    bool done;
    {
      std::lock_guard<std::mutex> lock(job.mu_);
      if (error.empty()) {
        if (!results[i].hypotheses.empty())
          stats.target_tokens += static_cast<int64_t>(results[i].hypotheses[0].ids.size());
        job.results_[batch[i].index] = std::move(results[i]);
      } else if (job.error_.empty()) {
        job.error_ = error;
      }
      done = --job.remaining_ == 0;
    }
    if (done) {
      release(job);
      job.done_cv_.notify_all();
    }
  }
  if (on_batch_) on_batch_(stats);
}

}  // namespace tfm::serve
