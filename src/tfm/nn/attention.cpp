#include "tfm/nn/attention.h"

#include "tfm/ops/shape.h"

namespace tfm::nn {

MultiHeadAttention::MultiHeadAttention(int64_t width, int64_t heads, bool bias,
                                       double attention_dropout, Generator& gen)
    : q_proj_(width, width, bias, gen),
      k_proj_(width, width, bias, gen),
      v_proj_(width, width, bias, gen),
      out_proj_(width, width, bias, gen),
      heads_(heads),
      attention_dropout_(attention_dropout) {
  register_module("q_proj", &q_proj_);
  register_module("k_proj", &k_proj_);
  register_module("v_proj", &v_proj_);
  register_module("out_proj", &out_proj_);
}

KVCache MultiHeadAttention::project(const Tensor& memory) const {
  return KVCache{k_proj_(memory), v_proj_(memory)};
}

AttentionResult MultiHeadAttention::attend(const Tensor& query, const KVCache& kv,
                                           const Tensor& key_padding_mask, bool causal,
                                           bool return_weights, Generator* gen) const {
  AttentionOptions opt;
  opt.causal = causal;
  opt.dropout = training() ? attention_dropout_ : 0.0;
  opt.generator = gen;
  opt.return_weights = return_weights;
  AttentionResult r = attention(q_proj_(query), kv.k, kv.v, heads_, key_padding_mask, opt);
  r.out = out_proj_(r.out);
  return r;
}

AttentionResult MultiHeadAttention::operator()(const Tensor& query, const Tensor& memory,
                                               const Tensor& key_padding_mask, bool causal,
                                               bool return_weights, Generator* gen) const {
  return attend(query, project(memory), key_padding_mask, causal, return_weights, gen);
}

AttentionResult MultiHeadAttention::self_step(const Tensor& x, KVCache& cache,
                                              bool return_weights) const {
  KVCache fresh = project(x);
  if (cache.length() == 0) {
    cache = fresh;
  } else {
    cache.k = concat({cache.k, fresh.k}, 1);
    cache.v = concat({cache.v, fresh.v}, 1);
  }
  // Causal attention is aligned to the end of the keys: new query t sees every cached position.
  return attend(x, cache, Tensor(), /*causal=*/true, return_weights, nullptr);
}

}  // namespace tfm::nn
