// Multi-head attention (self and cross) with q/k/v/out projections, and the key/value cache that
// incremental decoding appends to.
#pragma once

#include "tfm/nn/linear.h"
#include "tfm/ops/attention.h"

namespace tfm::nn {

// Projected keys and values, (B, L, C) each. For self-attention L grows by one per decode step;
// for cross-attention it is computed once per source.
struct KVCache {
  Tensor k, v;
  int64_t length() const { return k.defined() ? k.size(1) : 0; }
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
  // query (B, T, C) attends over projected keys/values.
  AttentionResult attend(const Tensor& query, const KVCache& kv, const Tensor& key_padding_mask,
                         bool causal, bool return_weights, Generator* gen) const;
  // Self-attention of x (B, T, C), the newest T positions: their keys/values join the cache,
  // and each query sees the cached positions and the new ones up to itself.
  AttentionResult self_step(const Tensor& x, KVCache& cache, bool return_weights) const;

  Linear q_proj_, k_proj_, v_proj_, out_proj_;
  int64_t heads_;
  double attention_dropout_;
};

}  // namespace tfm::nn
