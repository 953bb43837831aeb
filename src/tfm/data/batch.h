// Padded batches of token-id sequences in the model's conventions (docs/design.md): the encoder
// reads [x1 … xm, EOS] (by default; SeqFormat's source_bos / source_eos choose the framing); the
// decoder reads [BOS, y1 … yn] and predicts [y1 … yn, EOS].
#pragma once

#include <cstdint>
#include <vector>

#include "tfm/core/tensor.h"
#include "tfm/data/seq_format.h"

namespace tfm {

using Ids = std::vector<int32_t>;

struct Batch {
  Tensor src;      // i32 (B, S): [BOS] x1 … xm [EOS], pad-filled; undefined without sources
  Tensor trg_in;   // i32 (B, T): BOS y1 … yn, pad-filled
  Tensor trg_out;  // i32 (B, T): y1 … yn EOS, pad-filled
  int64_t src_tokens = 0, trg_tokens = 0;  // non-pad, each counting its BOS/EOS (src) or EOS
};

// src may be empty (decoder-only); otherwise one source per target.
Batch make_batch(const std::vector<const Ids*>& src, const std::vector<const Ids*>& trg,
                 const SeqFormat& format);
// Encoder input alone (for decoding): each sequence framed as `format` says, pad-filled to the
// longest. A source that would be left with no token at all (empty, and neither BOS nor EOS
// added) is an error: the encoder would have no key to attend to.
Tensor source_batch(const std::vector<const Ids*>& seqs, const SeqFormat& format);

}  // namespace tfm
