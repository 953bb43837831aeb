#include "tfm/runtime/batch_search.h"

#include <algorithm>
#include <future>
#include <limits>

#include "tfm/autograd/grad_mode.h"
#include "tfm/core/parallel.h"

namespace tfm::runtime {

namespace {

// The sentences to search (an empty source has none; a decoder-only model has only empty ones
// and continues every prompt, its prefix) and their lengths as batched.
struct Searched {
  std::vector<size_t> input;     // input index of each searched sentence, ascending
  std::vector<int64_t> lengths;  // framed source (or BOS + prompt) tokens
};

Searched searched_sentences(const ModelConfig& c, const std::vector<Ids>& sources,
                            const std::vector<Ids>& prefixes) {
  const int64_t specials = c.seq_format().source_specials();
  Searched s;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!c.has_encoder()) {
      s.input.push_back(i);
      s.lengths.push_back(1 + (prefixes.empty() ? 0 : static_cast<int64_t>(prefixes[i].size())));
    } else if (!sources[i].empty()) {
      s.input.push_back(i);
      s.lengths.push_back(static_cast<int64_t>(sources[i].size()) + specials);
    }
  }
  return s;
}

// Each sort group's batches (positions in s.input), as if the group were searched alone;
// s.input keeps the input order, so a group's sentences are a contiguous run of it.
std::vector<std::vector<size_t>> group_batches(const Searched& s, size_t inputs,
                                               const std::vector<size_t>& groups,
                                               const BatchLimits& limits) {
  std::vector<size_t> group_of(inputs, 0);
  for (size_t g = 0; g < groups.size(); ++g) {
    TFM_CHECK(groups[g] <= inputs && (g == 0 || groups[g] >= groups[g - 1]))
        << "search: sort groups must start at ascending input indices";
    for (size_t i = groups[g]; i < inputs; ++i) group_of[i] = g + 1;
  }
  std::vector<std::vector<size_t>> batches;
  for (size_t first = 0; first < s.input.size();) {
    size_t last = first;
    while (last < s.input.size() && group_of[s.input[last]] == group_of[s.input[first]]) ++last;
    const std::vector<int64_t> run(s.lengths.begin() + static_cast<int64_t>(first),
                                   s.lengths.begin() + static_cast<int64_t>(last));
    for (auto& b : length_batches(run, limits)) {
      for (size_t& k : b) k += first;
      batches.push_back(std::move(b));
    }
    first = last;
  }
  return batches;
}

// Every batch's shards in one pool of work: a thread that finishes a shard takes the next one,
// of this batch or a later one, instead of waiting for the slowest shard of its batch. Longest
// batches first (a batch's last item is its longest), so the last shards to start are the
// shortest and the threads finish close together. run(batch, begin, end) decodes a shard.
// The shard size is the search's for all the batches' sentences together.
template <typename Run>
void run_shards(const std::vector<std::vector<size_t>>& batches,
                const std::vector<int64_t>& lengths, const decode::Search& search, WorkerPool* pool,
                const Run& run) {
  struct Unit {
    size_t batch, begin, end;
  };
  std::vector<size_t> by_length(batches.size());
  for (size_t b = 0; b < batches.size(); ++b) by_length[b] = batches.size() - 1 - b;
  std::stable_sort(by_length.begin(), by_length.end(), [&](size_t a, size_t b) {
    return lengths[batches[a].back()] > lengths[batches[b].back()];
  });
  int64_t sentences = 0;
  for (const auto& b : batches) sentences += static_cast<int64_t>(b.size());
  const int64_t shard = search.shard_size(sentences);
  std::vector<Unit> units;
  for (size_t b : by_length) {
    const auto n = static_cast<int64_t>(batches[b].size());
    const int64_t parts = decode::shard_parts(n, shard);
    for (int64_t k = 0; k < parts; ++k)
      units.push_back({b, static_cast<size_t>(decode::shard_begin(n, parts, k)),
                       static_cast<size_t>(decode::shard_begin(n, parts, k + 1))});
  }
  auto run_all = [&] {
    parallel_items(static_cast<int64_t>(units.size()), get_threads(), [&](int64_t u) {
      const Unit& w = units[static_cast<size_t>(u)];
      run(w.batch, w.begin, w.end);
    });
  };
  if (pool == nullptr)
    run_all();
  else
    pool->submit(run_all).get();
}

// Each batch a job of the pool; every job waited for before rethrowing the first failure, so no
// job still uses the caller's locals.
template <typename Run>
void run_batches(size_t count, WorkerPool& pool, const Run& run) {
  std::vector<std::future<void>> done;
  done.reserve(count);
  for (size_t b = 0; b < count; ++b) done.push_back(pool.submit([&run, b] { run(b); }));
  std::exception_ptr first;
  for (auto& d : done) {
    try {
      d.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace

std::vector<decode::NBest> search_in_batches(
    const Transformer& model, const decode::Search& search, const std::vector<Ids>& sources,
    const std::vector<uint64_t>& ids, const std::vector<Ids>& prefixes, const BatchLimits& limits,
    WorkerPool* pool, const BatchDone& on_batch, const std::vector<size_t>& groups,
    const Abandoned& abandoned) {
  TFM_CHECK(ids.empty() || ids.size() == sources.size())
      << "search: " << ids.size() << " sentence ids for " << sources.size() << " sources";
  TFM_CHECK(prefixes.empty() || prefixes.size() == sources.size())
      << "search: " << prefixes.size() << " prefixes for " << sources.size() << " sources";
  const Searched s = searched_sentences(model.config(), sources, prefixes);
  const std::vector<std::vector<size_t>> batches = group_batches(s, sources.size(), groups, limits);
  std::vector<decode::NBest> results(sources.size());
  // Decodes the sentences batch[begin .. end) (positions in s.input) with `with` and delivers
  // them.
  auto run_on = [&](const decode::Search& with, size_t batch, size_t begin, size_t end) {
    std::vector<Ids> src, pre;
    std::vector<uint64_t> sid;
    std::vector<size_t> where;
    for (size_t j = begin; j < end; ++j) {
      const size_t i = s.input[batches[batch][j]];
      where.push_back(i);
      src.push_back(sources[i]);
      sid.push_back(ids.empty() ? i : ids[i]);
      if (!prefixes.empty()) pre.push_back(prefixes[i]);
    }
    if (abandoned && std::all_of(where.begin(), where.end(), abandoned)) return;
    NoGradGuard no_grad;  // grad mode is per thread: a worker's starts on
    std::vector<decode::NBest> r = with.run(model, src, sid, pre);
    // A searched sentence always ends with a hypothesis (EOS is forced at the max length); none
    // means every candidate's log-probability was NaN (weights too large for the arithmetic).
    // It goes on as a NaN score, which the front doors refuse naming the sentence
    // (Translator::Impl::check_scores), instead of an empty translation.
    for (decode::NBest& nb : r) {
      if (nb.empty()) {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        nb.push_back({.tokens = {}, .score = nan, .log_prob = nan, .attention = {}});
      }
    }
    if (on_batch) {
      on_batch(where, r);
      return;
    }
    for (size_t k = 0; k < r.size(); ++k) results[where[k]] = std::move(r[k]);
  };
  const decode::Search* shard_search = search.shard_search();
  if (shard_search != nullptr && (pool == nullptr || pool->workers() == 1)) {
    run_shards(batches, s.lengths, search, pool,
               [&](size_t b, size_t begin, size_t end) { run_on(*shard_search, b, begin, end); });
  } else if (pool == nullptr) {
    for (size_t b = 0; b < batches.size(); ++b) run_on(search, b, 0, batches[b].size());
  } else {
    run_batches(batches.size(), *pool, [&](size_t b) { run_on(search, b, 0, batches[b].size()); });
  }
  return results;
}

}  // namespace tfm::runtime
