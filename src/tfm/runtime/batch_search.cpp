#include "tfm/runtime/batch_search.h"

#include <future>

#include "tfm/autograd/grad_mode.h"

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
  std::vector<size_t> nonempty;
  std::vector<int64_t> lengths;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].empty()) continue;
    nonempty.push_back(i);
    lengths.push_back(static_cast<int64_t>(sources[i].size()) + specials);
  }
  std::vector<decode::NBest> results(sources.size());
  auto run_batch = [&](const std::vector<size_t>& batch) {
    std::vector<Ids> src, pre;
    std::vector<uint64_t> sid;
    std::vector<size_t> where;
    for (size_t k : batch) {
      where.push_back(nonempty[k]);
      src.push_back(sources[nonempty[k]]);
      sid.push_back(ids.empty() ? nonempty[k] : ids[nonempty[k]]);
      if (!prefixes.empty()) pre.push_back(prefixes[nonempty[k]]);
    }
    NoGradGuard no_grad;  // grad mode is per thread: a worker's starts on
    std::vector<decode::NBest> r = search.run(model, src, sid, pre);
    if (on_batch) {
      on_batch(where, r);
      return;
    }
    for (size_t k = 0; k < r.size(); ++k) results[where[k]] = std::move(r[k]);
  };
  const auto batches = length_batches(lengths, limits);
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
