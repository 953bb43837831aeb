// Token-based batching with length bucketing and reproducible shuffling.
//
// The budget rule. A batch of B examples costs
//     B × ((max source length + s) + (max target length + 1))
// tokens, s = the BOS/EOS the format adds to a source (1 by default): the padded sizes of the
// encoder input ([BOS] x… [EOS]) and of the decoder input [BOS, y…]
// (the same length as its output [y…, EOS]), i.e. the Batch tensors src and trg_in that
// make_batch builds. A batch never costs more than `batch_tokens`, with one exception: an
// example that alone costs more than the budget gets a batch of its own (dropping it silently
// would lose data; the corpus filter's max_length is the place to bound lengths).
//
// One epoch, a pure function of (seed, epoch):
//  1. shuffle all example indices (Philox stream 2·epoch of the seed);
//  2. cut them into chunks of about `bucket_batches` batches' worth of examples, sort each
//     chunk by length (source + target, then target), and pack it greedily in that order, so a
//     batch holds examples of similar length and little padding;
//  3. shuffle the order of all batches of the epoch (stream 2·epoch + 1), so lengths do not
//     drift through the epoch.
// Every example appears in exactly one batch of each epoch. The position (epoch, batch index)
// is all a resumed run needs to continue with the identical sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "tfm/data/batch.h"
#include "tfm/data/corpus.h"

namespace tfm {

struct BatcherOptions {
  int64_t batch_tokens = 4096;   // padded-token budget of a batch (see the rule above)
  int64_t max_sentences = 0;     // most examples a batch; 0: no cap
  int64_t bucket_batches = 100;  // chunk size for length sorting, in batches; 0: no bucketing
  bool shuffle = true;           // false: corpus order, batches in order (validation)
  uint64_t seed = 0;
  SeqFormat format;  // special ids and source framing (ModelConfig::seq_format())
  // false: a decoder-only model's examples (targets alone): batches have no src tensor and a
  // source costs nothing in the budget.
  bool sources = true;
};

// Where the batcher stands: the next batch it hands out is batch `index` of epoch `epoch`.
struct BatchPosition {
  int64_t epoch = 0;
  int64_t index = 0;
  bool operator==(const BatchPosition&) const = default;
};

class Batcher {
 public:
  Batcher(std::vector<Example> examples, BatcherOptions options);

  // The batches of an epoch, each a list of example indices. Deterministic in (seed, epoch).
  std::vector<std::vector<int64_t>> plan(int64_t epoch) const;

  // The batch at the current position, then moves one on (into the next epoch after the last
  // batch of one).
  Batch next();
  // Moves one on as next() does, without building the batch (another rank's share of an update).
  void skip();
  // The example indices of the batch next() would return, without moving.
  const std::vector<int64_t>& peek();
  BatchPosition position() const { return pos_; }
  // Jumps to a position, e.g. one saved in a checkpoint. index may equal the epoch's batch count
  // (it then means the start of the next epoch).
  void seek(BatchPosition pos);
  // Batches in the given epoch (the count can differ a little between epochs, since chunks hold
  // different examples).
  int64_t batches_in_epoch(int64_t epoch);

  // A 64-bit FNV-1a hash of the examples and of every option that shapes the batches. A trainer
  // saves it beside the position and refuses to resume when it differs: the same (epoch, index)
  // over other data or options would silently mean other batches.
  uint64_t fingerprint() const;

  const std::vector<Example>& examples() const { return examples_; }
  const BatcherOptions& options() const { return options_; }
  // The padded-token cost of a batch under the budget rule.
  int64_t cost(const std::vector<int64_t>& batch) const;
  // An example's encoder input length (source + the format's BOS/EOS) and decoder input length
  // (target + BOS), as the budget rule counts them.
  int64_t src_len(const Example& e) const {
    return options_.sources ? static_cast<int64_t>(e.src.size()) + options_.format.source_specials()
                            : 0;
  }
  int64_t trg_len(const Example& e) const { return static_cast<int64_t>(e.trg.size()) + 1; }
  // Batch tensors for a list of example indices.
  Batch make(const std::vector<int64_t>& batch) const;

 private:
  // Makes pos_ valid: loads the plan of pos_.epoch and rolls over finished epochs.
  void settle();

  std::vector<Example> examples_;
  BatcherOptions options_;
  int64_t chunk_examples_ = 0;  // examples a bucketing chunk holds
  BatchPosition pos_;
  int64_t plan_epoch_ = -1;  // the epoch plan_ holds, -1: none
  std::vector<std::vector<int64_t>> plan_;
};

// Padding share of a set of batches: 1 - real tokens / padded tokens, both counted with the
// budget rule (src_len, trg_len). For measuring what bucketing saves.
double padding_ratio(const Batcher& batcher, const std::vector<std::vector<int64_t>>& batches);

}  // namespace tfm
