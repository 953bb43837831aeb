// Padded batches of token-id sequences in the model's conventions (docs/design.md): the encoder
// reads [x1 … xm, EOS]; the decoder reads [BOS, y1 … yn] and predicts [y1 … yn, EOS].
#pragma once

#include <cstdint>
#include <vector>

#include "tfm/core/tensor.h"

namespace tfm {

using Ids = std::vector<int32_t>;

struct Batch {
  Tensor src;      // i32 (B, S): x1 … xm EOS, pad-filled; undefined when no sources were given
  Tensor trg_in;   // i32 (B, T): BOS y1 … yn, pad-filled
  Tensor trg_out;  // i32 (B, T): y1 … yn EOS, pad-filled
  int64_t src_tokens = 0, trg_tokens = 0;  // non-pad, each counting its EOS
};

// src may be empty (decoder-only); otherwise one source per target.
Batch make_batch(const std::vector<const Ids*>& src, const std::vector<const Ids*>& trg,
                 int64_t pad_id, int64_t bos_id, int64_t eos_id);
// Encoder input alone (for decoding): each sequence + EOS, pad-filled to the longest.
Tensor source_batch(const std::vector<const Ids*>& seqs, int64_t pad_id, int64_t eos_id);

}  // namespace tfm
