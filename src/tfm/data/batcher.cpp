#include "tfm/data/batcher.h"

#include <algorithm>
#include <numeric>

#include "tfm/core/check.h"
#include "tfm/core/rng.h"

namespace tfm {

namespace {

// Fisher-Yates driven by a Philox stream: element i of the stream picks the swap partner of
// position n-1-i. 64 random bits reduced modulo at most 2^31 leave a bias below 2^-32.
template <typename T>
void shuffle(std::vector<T>& v, const RandomStream& stream) {
  for (size_t k = v.size(); k > 1; --k) {
    const auto b = stream.block(v.size() - k);
    const uint64_t r = (static_cast<uint64_t>(b[0]) << 32) | b[1];
    std::swap(v[k - 1], v[r % k]);
  }
}

}  // namespace

Batcher::Batcher(std::vector<Example> examples, BatcherOptions options)
    : examples_(std::move(examples)), options_(options) {
  TFM_CHECK(!examples_.empty()) << "batcher: no training examples (all were filtered out?)";
  TFM_CHECK(options_.batch_tokens > 0)
      << "batcher: batch_tokens must be positive, got " << options_.batch_tokens;
  TFM_CHECK(options_.max_sentences >= 0)
      << "batcher: max_sentences must be >= 0, got " << options_.max_sentences;
  TFM_CHECK(options_.bucket_batches >= 0)
      << "batcher: bucket_batches must be >= 0, got " << options_.bucket_batches;
  // The chunk holds about bucket_batches batches: estimate examples a batch from the mean
  // cost of one example (an underestimate of padding, so chunks come out a little large).
  double total = 0;
  for (const Example& e : examples_) total += static_cast<double>(src_len(e) + trg_len(e));
  const double mean = total / static_cast<double>(examples_.size());
  double per_batch = std::max(1.0, static_cast<double>(options_.batch_tokens) / mean);
  if (options_.max_sentences > 0) {
    per_batch = std::min(per_batch, static_cast<double>(options_.max_sentences));
  }
  chunk_examples_ =
      options_.bucket_batches == 0
          ? 1
          : std::max<int64_t>(1, static_cast<int64_t>(per_batch * options_.bucket_batches));
}

int64_t Batcher::cost(const std::vector<int64_t>& batch) const {
  int64_t s = 0, t = 0;
  for (int64_t i : batch) {
    s = std::max(s, src_len(examples_[i]));
    t = std::max(t, trg_len(examples_[i]));
  }
  return static_cast<int64_t>(batch.size()) * (s + t);
}

std::vector<std::vector<int64_t>> Batcher::plan(int64_t epoch) const {
  TFM_CHECK(epoch >= 0) << "batcher: negative epoch " << epoch;
  const auto n = static_cast<int64_t>(examples_.size());
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const auto e = static_cast<uint64_t>(epoch);
  if (options_.shuffle) shuffle(order, RandomStream(options_.seed, 2 * e));

  std::vector<std::vector<int64_t>> batches;
  const bool bucket = options_.bucket_batches > 0;
  const int64_t chunk = bucket ? chunk_examples_ : n;
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t end = std::min(n, begin + chunk);
    if (bucket) {
      // stable_sort keeps the shuffled order among equal lengths, so ties vary with the seed.
      std::stable_sort(order.begin() + begin, order.begin() + end, [&](int64_t a, int64_t b) {
        const Example& x = examples_[a];
        const Example& y = examples_[b];
        const size_t lx = x.src.size() + x.trg.size(), ly = y.src.size() + y.trg.size();
        return lx != ly ? lx < ly : x.trg.size() < y.trg.size();
      });
    }
    // Greedy packing in order: close the batch when the next example would break the budget
    // or the sentence cap. A batch never spans chunks.
    std::vector<int64_t> cur;
    int64_t ms = 0, mt = 0;
    for (int64_t k = begin; k < end; ++k) {
      const int64_t i = order[static_cast<size_t>(k)];
      const int64_t s = std::max(ms, src_len(examples_[i]));
      const int64_t t = std::max(mt, trg_len(examples_[i]));
      const auto b = static_cast<int64_t>(cur.size()) + 1;
      const bool over_budget = b * (s + t) > options_.batch_tokens;
      const bool over_cap = options_.max_sentences > 0 && b > options_.max_sentences;
      if (!cur.empty() && (over_budget || over_cap)) {
        batches.push_back(std::move(cur));
        cur.clear();
        ms = mt = 0;
      }
      cur.push_back(i);
      ms = std::max(ms, src_len(examples_[i]));
      mt = std::max(mt, trg_len(examples_[i]));
    }
    if (!cur.empty()) batches.push_back(std::move(cur));
  }
  if (options_.shuffle) shuffle(batches, RandomStream(options_.seed, 2 * e + 1));
  return batches;
}

void Batcher::settle() {
  for (;;) {
    if (plan_epoch_ != pos_.epoch) {
      plan_ = plan(pos_.epoch);
      plan_epoch_ = pos_.epoch;
    }
    if (pos_.index < static_cast<int64_t>(plan_.size())) return;
    pos_.index -= static_cast<int64_t>(plan_.size());
    ++pos_.epoch;
  }
}

const std::vector<int64_t>& Batcher::peek() {
  settle();
  return plan_[static_cast<size_t>(pos_.index)];
}

Batch Batcher::next() {
  Batch b = make(peek());
  skip();
  return b;
}

void Batcher::skip() {
  settle();
  ++pos_.index;
  if (pos_.index == static_cast<int64_t>(plan_.size())) {
    // Report the start of the next epoch rather than one past the end of this one.
    ++pos_.epoch;
    pos_.index = 0;
  }
}

void Batcher::seek(BatchPosition pos) {
  TFM_CHECK(pos.epoch >= 0 && pos.index >= 0)
      << "batcher: invalid position (epoch " << pos.epoch << ", batch " << pos.index << ")";
  const int64_t count = batches_in_epoch(pos.epoch);
  TFM_CHECK(pos.index <= count) << "batcher: position (epoch " << pos.epoch << ", batch "
                                << pos.index << ") is past the epoch's " << count
                                << " batches; was the corpus or batch size changed?";
  pos_ = pos;
  if (pos_.index == count) {
    ++pos_.epoch;
    pos_.index = 0;
  }
}

int64_t Batcher::batches_in_epoch(int64_t epoch) {
  if (plan_epoch_ != epoch) {
    plan_ = plan(epoch);
    plan_epoch_ = epoch;
  }
  return static_cast<int64_t>(plan_.size());
}

Batch Batcher::make(const std::vector<int64_t>& batch) const {
  std::vector<const Ids*> src, trg;
  src.reserve(batch.size());
  trg.reserve(batch.size());
  for (int64_t i : batch) {
    TFM_CHECK(i >= 0 && i < static_cast<int64_t>(examples_.size()))
        << "batcher: example index " << i << " out of range";
    if (options_.sources) src.push_back(&examples_[static_cast<size_t>(i)].src);
    trg.push_back(&examples_[static_cast<size_t>(i)].trg);
  }
  return make_batch(src, trg, options_.format);
}

uint64_t Batcher::fingerprint() const {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) {
    for (int k = 0; k < 8; ++k) {
      h ^= (v >> (8 * k)) & 0xFF;
      h *= 1099511628211ull;
    }
  };
  mix(examples_.size());
  for (const Example& e : examples_) {
    mix(e.src.size());
    for (int32_t id : e.src) mix(static_cast<uint32_t>(id));
    mix(e.trg.size());
    for (int32_t id : e.trg) mix(static_cast<uint32_t>(id));
  }
  const BatcherOptions& o = options_;
  const SeqFormat& f = o.format;
  for (int64_t v :
       {o.batch_tokens, o.max_sentences, o.bucket_batches, f.pad_id, f.bos_id, f.eos_id}) {
    mix(static_cast<uint64_t>(v));
  }
  // The source framing changes batch costs. Mixed in only when it is not the default (EOS only),
  // so that the fingerprints of runs saved before the framing was an option stay the same.
  if (f.source_bos || !f.source_eos) mix(0x100 | (f.source_bos ? 2 : 0) | (f.source_eos ? 1 : 0));
  mix(o.shuffle ? 1 : 0);
  mix(o.seed);
  return h;
}

double padding_ratio(const Batcher& batcher, const std::vector<std::vector<int64_t>>& batches) {
  double real = 0, padded = 0;
  for (const auto& b : batches) {
    padded += static_cast<double>(batcher.cost(b));
    for (int64_t i : b) {
      const Example& e = batcher.examples()[static_cast<size_t>(i)];
      real += static_cast<double>(batcher.src_len(e) + batcher.trg_len(e));
    }
  }
  return padded > 0 ? 1.0 - real / padded : 0.0;
}

}  // namespace tfm
