// How a decoding search's batch is encoded: in chunks of sentences of similar length, each padded
// only to its own longest, instead of every sentence to the batch's longest. A batch of 64 cut
// from length-sorted sources still spans a range of lengths (Multi30k's test set: 18 208 padded
// rows for 15 985 tokens, 12 % of the encoder's products spent on padding); chunks of at most 256
// padded rows leave 2 %, and keep a chunk's activations (256 × d) in L2 for the layer's
// products. A row of the encoder does not depend on the padding after it (the products are row
// by row, padded keys are masked out exactly), so the chunks give the batch's bits.
#pragma once

#include <cstdint>
#include <vector>

#include "tfm/core/tensor.h"

namespace tfm {

// Rows (of the batch) encoded together, each padded to `length` positions.
struct EncodeChunk {
  std::vector<int64_t> rows;     // ascending length
  std::vector<int64_t> lengths;  // each row's
  int64_t length = 0;            // the longest (the last)
};

// Padded rows a chunk holds at most (unless one sentence is longer).
inline constexpr int64_t kEncodeChunkRows = 256;

// Each row's length: its last position that is not `pad_id`, plus one (at least 1, so that a row
// of padding is encoded as one masked position). ids: i32 (B, S).
std::vector<int64_t> source_lengths(const Tensor& ids, int64_t pad_id);

// The rows in order of length (ties in row order), cut greedily: a chunk takes the next row while
// its rows times the next row's length stay within max_rows. Every row in exactly one chunk.
std::vector<EncodeChunk> encode_chunks(const std::vector<int64_t>& lengths, int64_t max_rows);

}  // namespace tfm
