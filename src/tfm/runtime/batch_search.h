// The search over many sentences, batched once for every front end: sentences sorted by length,
// cut under BatchLimits, decoded batch by batch (in parallel on a WorkerPool when given), and
// returned in input order.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tfm/data/length_batches.h"
#include "tfm/decode/search.h"
#include "tfm/runtime/worker_pool.h"

namespace tfm::runtime {

// sources: ids without BOS/EOS. ids: each sentence's stable id (keys sampling; empty: its index).
// prefixes: each sentence's target prefix (decode::Search::run; empty: none). An empty source
// gets an empty n-best list without a search, prefix or not. `pool` null: the calling thread.
// on_batch, when set, is called from the thread that ran each batch, or each shard of a batch
// when the search is sharded (decode::Search::shard_size), under no lock and possibly from
// several threads at once, with the input indices of its sentences and their results, which it
// may move from; the results are returned only when on_batch is not set. A sharded search's
// shards of all batches are spread over the threads together (one pool job when `pool` has one
// worker). groups: where each sort group after the first starts (ascending input indices; empty:
// one group): each group's sources are sorted and cut on their own, as if searched alone (the
// request queue's own requests decoded in one pass). abandoned, when set, is asked before each
// batch (or shard) for each of its input indices: a batch whose sentences are all abandoned (their
// call cancelled, e.g. by Ctrl-C) is skipped, neither searched nor passed to on_batch.
using BatchDone = std::function<void(const std::vector<size_t>&, std::vector<decode::NBest>&)>;
using Abandoned = std::function<bool(size_t)>;
std::vector<decode::NBest> search_in_batches(
    const Transformer& model, const decode::Search& search, const std::vector<Ids>& sources,
    const std::vector<uint64_t>& ids, const std::vector<Ids>& prefixes, const BatchLimits& limits,
    WorkerPool* pool = nullptr, const BatchDone& on_batch = {},
    const std::vector<size_t>& groups = {}, const Abandoned& abandoned = {});

}  // namespace tfm::runtime
