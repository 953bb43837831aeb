// The reference for the attention a search returns: the model's own full (teacher-forced,
// non-incremental) forward pass, whose attention runs the general kernel, not the decoding one.
#pragma once

#include <vector>

#include "tfm/data/batch.h"
#include "tfm/model/transformer.h"

namespace tfm::testing {

// The last decoder layer's cross-attention, averaged over heads, of forward(src, [BOS tokens]):
// one row per token (row t from the position that predicts tokens[t]), over the source as the
// model frames it (config.seq_format()).
std::vector<std::vector<float>> forward_cross_attention(const Transformer& model, const Ids& src,
                                                        const Ids& tokens);

}  // namespace tfm::testing
