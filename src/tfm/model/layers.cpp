#include "tfm/model/layers.h"

#include "tfm/ops/dropout.h"
#include "tfm/ops/elementwise.h"

namespace tfm {

FeedForward::FeedForward(const ModelConfig& c, Generator& gen)
    : fc1_(c.d_model, c.d_ff, c.bias, gen),
      fc2_(c.d_ff, c.d_model, c.bias, gen),
      act_(c.activation) {
  register_module("fc1", &fc1_);
  register_module("fc2", &fc2_);
}

Tensor FeedForward::operator()(const Tensor& x) const {
  return fc2_(fc1_(x, act_));
}

Sublayer::Sublayer(const ModelConfig& c, const nn::LayerNorm& norm, const nn::Module& owner,
                   Generator* gen)
    : c_(c), norm_(norm), owner_(owner), gen_(gen) {}

Tensor Sublayer::input(const Tensor& x) const {
  return c_.norm == NormPlacement::pre ? norm_(x) : x;
}

Tensor Sublayer::output(const Tensor& x, const Tensor& fx) const {
  Tensor d = dropout(fx, c_.dropout, owner_.training(), gen_);
  if (c_.norm == NormPlacement::pre) return add(x, d);
  return norm_.add(d, x).y;
}

EncoderLayer::EncoderLayer(const ModelConfig& c, Generator& gen)
    : self_attn_(c.d_model, c.heads, c.bias, c.attention_dropout, gen),
      self_attn_norm_(c.d_model, c.layer_norm_eps),
      ffn_(c, gen),
      ffn_norm_(c.d_model, c.layer_norm_eps),
      c_(c) {
  register_module("self_attn", &self_attn_);
  register_module("self_attn_norm", &self_attn_norm_);
  register_module("ffn", &ffn_);
  register_module("ffn_norm", &ffn_norm_);
}

Tensor EncoderLayer::operator()(const Tensor& x, const Tensor& src_mask, Generator* gen,
                                std::vector<Tensor>* weights) const {
  Sublayer attn(c_, self_attn_norm_, *this, gen), ffn(c_, ffn_norm_, *this, gen);
  Tensor h = attn.input(x);
  AttentionResult a = self_attn_(h, h, src_mask, false, weights != nullptr, gen);
  if (weights) weights->push_back(a.weights);
  Tensor y = attn.output(x, a.out);
  return ffn.output(y, ffn_(ffn.input(y)));
}

DecoderLayer::DecoderLayer(const ModelConfig& c, Generator& gen)
    : self_attn_(c.d_model, c.heads, c.bias, c.attention_dropout, gen),
      self_attn_norm_(c.d_model, c.layer_norm_eps),
      ffn_(c, gen),
      ffn_norm_(c.d_model, c.layer_norm_eps),
      c_(c) {
  register_module("self_attn", &self_attn_);
  register_module("self_attn_norm", &self_attn_norm_);
  if (c.has_encoder()) {
    cross_attn_ = std::make_unique<nn::MultiHeadAttention>(c.d_model, c.heads, c.bias,
                                                           c.attention_dropout, gen);
    cross_attn_norm_ = std::make_unique<nn::LayerNorm>(c.d_model, c.layer_norm_eps);
    register_module("cross_attn", cross_attn_.get());
    register_module("cross_attn_norm", cross_attn_norm_.get());
  }
  register_module("ffn", &ffn_);
  register_module("ffn_norm", &ffn_norm_);
}

Tensor DecoderLayer::cross_and_ffn(Tensor x, const nn::KVCache& cross, const Tensor& src_mask,
                                   Generator* gen, AttentionWeights* weights, Tensor* cross_weights,
                                   const Tensor& src_rows) const {
  if (cross_attn_) {
    Sublayer sub(c_, *cross_attn_norm_, *this, gen);
    AttentionResult a =
        cross_attn_->attend(sub.input(x), cross, src_mask, false,
                            weights != nullptr || cross_weights != nullptr, gen, src_rows);
    if (weights) weights->decoder_cross.push_back(a.weights);
    if (cross_weights) *cross_weights = a.weights;
    x = sub.output(x, a.out);
  }
  Sublayer ffn(c_, ffn_norm_, *this, gen);
  return ffn.output(x, ffn_(ffn.input(x)));
}

Tensor DecoderLayer::operator()(const Tensor& x, const Tensor& trg_mask, const Tensor& memory,
                                const Tensor& src_mask, Generator* gen,
                                AttentionWeights* weights) const {
  Sublayer attn(c_, self_attn_norm_, *this, gen);
  Tensor h = attn.input(x);
  AttentionResult a = self_attn_(h, h, trg_mask, true, weights != nullptr, gen);
  if (weights) weights->decoder_self.push_back(a.weights);
  Tensor y = attn.output(x, a.out);
  nn::KVCache cross;
  if (cross_attn_) cross = cross_attn_->project(memory);
  return cross_and_ffn(y, cross, src_mask, gen, weights);
}

Tensor DecoderLayer::step(const Tensor& x, DecoderLayerCache& cache, const Tensor& src_mask,
                          AttentionWeights* weights, int64_t reserve, Tensor* cross_weights,
                          const Tensor& src_rows) const {
  Sublayer attn(c_, self_attn_norm_, *this, nullptr);
  AttentionResult a = self_attn_.self_step(attn.input(x), cache.self, weights != nullptr, reserve);
  if (weights) weights->decoder_self.push_back(a.weights);
  return cross_and_ffn(attn.output(x, a.out), cache.cross, src_mask, nullptr, weights,
                       cross_weights, src_rows);
}

}  // namespace tfm
