// Encoder and decoder layers in pre- or post-norm placement (seeds 000 vs 002/003/004).
#pragma once

#include <vector>

#include "tfm/model/config.h"
#include "tfm/nn/attention.h"

namespace tfm {

// Position-wise FFN: fc2(act(fc1(x))), the activation fused into fc1's GEMM.
class FeedForward : public nn::Module {
 public:
  FeedForward(const ModelConfig& c, Generator& gen);
  Tensor operator()(const Tensor& x) const;
  nn::Linear fc1_, fc2_;
  Activation act_;
};

// What a forward pass can hand back besides its output: every attention's weights (B, H, T, S),
// in layer order (seed 004's return_attns).
struct AttentionWeights {
  std::vector<Tensor> encoder_self, decoder_self, decoder_cross;
};

// A residual sub-layer: post-norm LN(x + dropout(f(x))), or pre-norm x + dropout(f(LN(x))).
class Sublayer {
 public:
  Sublayer(const ModelConfig& c, const nn::LayerNorm& norm, const nn::Module& owner,
           Generator* gen);
  Tensor input(const Tensor& x) const;                     // what f reads
  Tensor output(const Tensor& x, const Tensor& fx) const;  // the residual stream after it

 private:
  const ModelConfig& c_;
  const nn::LayerNorm& norm_;
  const nn::Module& owner_;
  Generator* gen_;
};

class EncoderLayer : public nn::Module {
 public:
  EncoderLayer(const ModelConfig& c, Generator& gen);
  // x (B, S, C); src_mask u8 (B, S).
  Tensor operator()(const Tensor& x, const Tensor& src_mask, Generator* gen,
                    std::vector<Tensor>* weights) const;

  nn::MultiHeadAttention self_attn_;
  nn::LayerNorm self_attn_norm_;
  FeedForward ffn_;
  nn::LayerNorm ffn_norm_;

 private:
  const ModelConfig& c_;
};

// Per-layer decoding state: self-attention keys/values so far, cross-attention keys/values.
struct DecoderLayerCache {
  nn::KVCache self, cross;
};

class DecoderLayer : public nn::Module {
 public:
  DecoderLayer(const ModelConfig& c, Generator& gen);
  // Full sequence: x (B, T, C), memory (B, S, C) or undefined (decoder-only).
  Tensor operator()(const Tensor& x, const Tensor& trg_mask, const Tensor& memory,
                    const Tensor& src_mask, Generator* gen, AttentionWeights* weights) const;
  // The newest positions x (B, t, C), with the cache holding what came before (allocated for
  // `reserve` positions on the first step). cross_weights, when not null, receives this layer's
  // cross-attention probabilities (B, H, t, S) alone. src_rows, when defined, i32 (B): row b's
  // source is row src_rows[b] of cache.cross and src_mask (which then keep one row per source).
  Tensor step(const Tensor& x, DecoderLayerCache& cache, const Tensor& src_mask,
              AttentionWeights* weights, int64_t reserve = 0, Tensor* cross_weights = nullptr,
              const Tensor& src_rows = Tensor()) const;

  nn::MultiHeadAttention self_attn_;
  nn::LayerNorm self_attn_norm_;
  std::unique_ptr<nn::MultiHeadAttention> cross_attn_;  // null without an encoder
  std::unique_ptr<nn::LayerNorm> cross_attn_norm_;
  FeedForward ffn_;
  nn::LayerNorm ffn_norm_;

 private:
  // src_rows: as DecoderLayer::step's.
  Tensor cross_and_ffn(Tensor x, const nn::KVCache& cross, const Tensor& src_mask, Generator* gen,
                       AttentionWeights* weights, Tensor* cross_weights = nullptr,
                       const Tensor& src_rows = Tensor()) const;
  const ModelConfig& c_;
};

}  // namespace tfm
