// Teacher-forced scoring: the total log-probability of target + EOS given the source, framed as
// the model's config says (source_bos / source_eos).
#pragma once

#include <stop_token>
#include <vector>

#include "tfm/data/batch.h"
#include "tfm/data/length_batches.h"
#include "tfm/model/transformer.h"

namespace tfm {

// Per pair, in input order: log p of each target token given the source and the tokens before
// it, then EOS's (target.size() + 1 values). Batched as score_pairs. `stop` is checked before
// each batch: once requested, a tfm::Error (the caller gave up). start_id: the token the decoder
// reads first (-1: BOS), for a decoder-only sequence read as given.
std::vector<std::vector<float>> score_pairs_per_token(
    const Transformer& model, const std::vector<Ids>& src, const std::vector<Ids>& trg,
    const BatchLimits& limits, const std::stop_token& stop = {}, int64_t start_id = -1);

// One total log-probability per pair (the per-token values summed in double), in input order. Pairs
// are batched by length (length_batches over source + target lengths) with grad mode off. src is
// empty for decoder-only models.
std::vector<double> score_pairs(const Transformer& model, const std::vector<Ids>& src,
                                const std::vector<Ids>& trg, const BatchLimits& limits);
inline std::vector<double> score_pairs(const Transformer& model, const std::vector<Ids>& src,
                                       const std::vector<Ids>& trg, int64_t batch_size = 32) {
  return score_pairs(model, src, trg, BatchLimits{batch_size, 0});
}

}  // namespace tfm
