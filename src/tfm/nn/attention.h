// Multi-head attention (self and cross) with q/k/v/out projections, and the key/value cache that
// incremental decoding appends to.
#pragma once

#include <vector>

#include "tfm/nn/linear.h"
#include "tfm/ops/attention.h"

namespace tfm::nn {

// Projected keys and values. For cross-attention they are computed once per source: k, v
// (B, L, C), set directly. For self-attention L grows by one per decode step: k and v are then
// views of the first L positions of buffers (rows, capacity, C), a step writes its keys/values in
// place and attention reads the views through their batch stride, so no step copies the cache.
//
// A reorder (beam search) copies no keys either: a row's earlier positions stay where its
// ancestors wrote them, and `slots` (B, L) says which buffer row holds each position of each
// row; k and v span every buffer row in use (R ≥ B rows). A step writes position L of row b into
// buffer row b, which no row's history holds yet (every row is L long), so nothing is ever
// overwritten. A reorder moves B·L slot indices (an op, on the cache's device) instead of 2·B·L·C
// values.
struct KVCache {
  Tensor k, v;   // (B, L, C) set directly; appended: (R, L, C), the buffer rows in use
  Tensor slots;  // appended: i32 (B, L), row stride = capacity; position s of row b is in row
                 // slots[b, s] of k/v. Undefined for a cache set directly (row b holds row b's)
  int64_t length() const { return k.defined() ? k.size(1) : 0; }
  int64_t batch() const { return slots.defined() ? slots.size(0) : k.defined() ? k.size(0) : 0; }
  // Positions the buffers hold before append() must grow them (0 before the first append).
  int64_t capacity() const { return k_buf_.defined() ? k_buf_.size(1) : 0; }

  // Writes k_new/v_new (B, t, C) after the cached positions. Buffers are allocated (or grown,
  // copying what is cached) only when full: first to kFirstPositions (or the positions written,
  // if more), then doubling, never past `reserve` (the most positions the caller will append, 0:
  // no bound) while that is enough. A search's bound, a · source + b, is often twice what its
  // targets use, and the buffers of every row and layer were allocated to it on the first step.
  void append(const Tensor& k_new, const Tensor& v_new, int64_t reserve = 0);
  static constexpr int64_t kFirstPositions = 32;
  // Row i becomes old row rows[i] (rows may repeat; beam search): only the slots move (into a
  // second slot buffer, swapped, so once both are large enough a reorder allocates nothing).
  void reorder(const std::vector<int64_t>& rows);
  // Row i becomes old row rows[i] by copying its keys and values: the cache is then one set
  // directly (cross-attention's, which the kernels read row by row without slots).
  void gather_rows(const std::vector<int64_t>& rows);
  // k and v with each row's positions in order: (B, L, C) (k, v themselves when set directly),
  // for the kernels that do not read slots.
  std::pair<Tensor, Tensor> rows_in_order() const;

 private:
  void adopt();  // makes a cache set directly (contiguous k/v) appendable
  // Buffers of at least `rows` rows and `cap` positions, holding what they held.
  void reserve_buffers(int64_t rows, int64_t cap, int64_t width, DType dtype, Device device);
  // k, v over `held` buffer rows and slots over `rows` rows, `len` positions each.
  void set_views(int64_t held, int64_t rows, int64_t len);
  Tensor k_buf_, v_buf_;          // (row capacity, capacity, C)
  Tensor slot_buf_, slot_spare_;  // i32 (row capacity, capacity, 1); the reorder's target
  Tensor row_ids_;                // i32 (row capacity, 1, 1): 0, 1, …, what a step's slots are
};

class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(int64_t width, int64_t heads, bool bias, double attention_dropout,
                     Generator& gen);

  // query (B, T, C) attends over memory (B, S, C); key_padding_mask u8 (B, S) or undefined.
  AttentionResult operator()(const Tensor& query, const Tensor& memory,
                             const Tensor& key_padding_mask, bool causal, bool return_weights,
                             Generator* gen) const;
  // Keys and values of memory, for attending to it many times.
  KVCache project(const Tensor& memory) const;
  // query (B, T, C) attends over projected keys/values. kv_rows, when defined, i32 (B): query
  // row b reads kv's (and the mask's) row kv_rows[b], as ops/decode_attention.h says (the beams
  // of a sentence sharing its cross-attention keys).
  AttentionResult attend(const Tensor& query, const KVCache& kv, const Tensor& key_padding_mask,
                         bool causal, bool return_weights, Generator* gen,
                         const Tensor& kv_rows = Tensor()) const;
  // Self-attention of x (B, T, C), the newest T positions: their keys/values join the cache
  // (reserving room for `reserve` positions when it allocates), and each query sees the cached
  // positions and the new ones up to itself.
  AttentionResult self_step(const Tensor& x, KVCache& cache, bool return_weights,
                            int64_t reserve = 0) const;

  Linear q_proj_, k_proj_, v_proj_, out_proj_;
  int64_t heads_;
  double attention_dropout_;
};

}  // namespace tfm::nn
