#include "tfm/runtime/batch_search.h"

#include <algorithm>
#include <future>

#include "tfm/autograd/grad_mode.h"
#include "tfm/core/parallel.h"

namespace tfm::runtime {

std::vector<decode::NBest> search_in_batches(const Transformer& model, const decode::Search& search,
                                             const std::vector<Ids>& sources,
                                             const std::vector<uint64_t>& ids,
                                             const std::vector<Ids>& prefixes,
                                             const BatchLimits& limits, WorkerPool* pool,
                                             const BatchDone& on_batch) {
  TFM_CHECK(ids.empty() || ids.size() == sources.size())
      << "search: " << ids.size() << " sentence ids for " << sources.size() << " sources";
  TFM_CHECK(prefixes.empty() || prefixes.size() == sources.size())
      << "search: " << prefixes.size() << " prefixes for " << sources.size() << " sources";
  const int64_t specials = model.config().seq_format().source_specials();
  // An empty source has no translation. A decoder-only model has only empty ones and continues
  // every prompt (its prefix), batched by the prompts' lengths.
  const bool decoder_only = !model.config().has_encoder();
  std::vector<size_t> nonempty;
  std::vector<int64_t> lengths;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (decoder_only) {
      nonempty.push_back(i);
      lengths.push_back(1 + (prefixes.empty() ? 0 : static_cast<int64_t>(prefixes[i].size())));
      continue;
    }
    if (sources[i].empty()) continue;
    nonempty.push_back(i);
    lengths.push_back(static_cast<int64_t>(sources[i].size()) + specials);
  }
  std::vector<decode::NBest> results(sources.size());
  // Decodes the sentences batch[0 .. count) (positions in `nonempty`) with `s` and delivers them.
  auto run_on = [&](const decode::Search& s, const size_t* batch, size_t count) {
    std::vector<Ids> src, pre;
    std::vector<uint64_t> sid;
    std::vector<size_t> where;
    for (size_t j = 0; j < count; ++j) {
      const size_t k = batch[j];
      where.push_back(nonempty[k]);
      src.push_back(sources[nonempty[k]]);
      sid.push_back(ids.empty() ? nonempty[k] : ids[nonempty[k]]);
      if (!prefixes.empty()) pre.push_back(prefixes[nonempty[k]]);
    }
    NoGradGuard no_grad;  // grad mode is per thread: a worker's starts on
    std::vector<decode::NBest> r = s.run(model, src, sid, pre);
    if (on_batch) {
      on_batch(where, r);
      return;
    }
    for (size_t k = 0; k < r.size(); ++k) results[where[k]] = std::move(r[k]);
  };
  // Each sort group's batches, as if the group were searched alone; nonempty keeps the input
  // order, so a group's sources are a contiguous run of it.
  TFM_CHECK(limits.sort_group >= 0)
      << "sort group must be positive or 0 for one group (got " << limits.sort_group << ")";
  std::vector<std::vector<size_t>> batches;
  for (size_t first = 0; first < nonempty.size();) {
    size_t last = nonempty.size();
    if (limits.sort_group > 0) {
      const size_t group = nonempty[first] / static_cast<size_t>(limits.sort_group);
      last = first;
      while (last < nonempty.size() &&
             nonempty[last] / static_cast<size_t>(limits.sort_group) == group)
        ++last;
    }
    const std::vector<int64_t> run(lengths.begin() + static_cast<int64_t>(first),
                                   lengths.begin() + static_cast<int64_t>(last));
    for (auto& b : length_batches(run, limits)) {
      for (size_t& k : b) k += first;
      batches.push_back(std::move(b));
    }
    first = last;
  }
  const decode::Search* shard_search = search.shard_search();
  if (shard_search != nullptr && (pool == nullptr || pool->workers() == 1)) {
    // Every batch's shards in one pool of work: a thread that finishes a shard takes the next
    // one, of this batch or a later one, instead of waiting for the slowest shard of its batch.
    // Longest batches first (a batch's last item is its longest), so the last shards to start
    // are the shortest and the threads finish close together.
    struct Unit {
      size_t batch, begin, end;
    };
    const auto shard = static_cast<size_t>(search.shard_size());
    std::vector<size_t> by_length(batches.size());
    for (size_t b = 0; b < batches.size(); ++b) by_length[b] = batches.size() - 1 - b;
    std::stable_sort(by_length.begin(), by_length.end(), [&](size_t a, size_t b) {
      return lengths[batches[a].back()] > lengths[batches[b].back()];
    });
    std::vector<Unit> units;
    for (size_t b : by_length)
      for (size_t k = 0; k < batches[b].size(); k += shard)
        units.push_back({b, k, std::min(batches[b].size(), k + shard)});
    auto run_all = [&] {
      parallel_items(static_cast<int64_t>(units.size()), get_threads(), [&](int64_t u) {
        const Unit& w = units[static_cast<size_t>(u)];
        run_on(*shard_search, batches[w.batch].data() + w.begin, w.end - w.begin);
      });
    };
    if (pool == nullptr)
      run_all();
    else
      pool->submit(run_all).get();
    return results;
  }
  auto run_batch = [&](const std::vector<size_t>& batch) {
    run_on(search, batch.data(), batch.size());
  };
  if (pool == nullptr) {
    for (const auto& b : batches) run_batch(b);
    return results;
  }
  std::vector<std::future<void>> done;
  done.reserve(batches.size());
  for (const auto& b : batches) done.push_back(pool->submit([&run_batch, &b] { run_batch(b); }));
  // Wait for every batch before rethrowing, so no job still uses this frame's locals.
  std::exception_ptr first;
  for (auto& d : done) {
    try {
      d.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  return results;
}

}  // namespace tfm::runtime
