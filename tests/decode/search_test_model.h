// The decode tests' model and sources: a tiny seeded Transformer over a 9-word vocabulary, and
// the decoder's logits from the full forward pass, the reference the searches' steps must equal.
#pragma once

#include <memory>
#include <vector>

#include "tfm/autograd/grad_mode.h"
#include "tfm/decode/search.h"

namespace tfm::decode::testing {

inline std::unique_ptr<Transformer> search_model(uint64_t seed) {
  ModelConfig c = ModelConfig::preset("tiny");
  c.d_model = 16, c.heads = 4, c.d_ff = 24, c.encoder_layers = 2, c.decoder_layers = 2;
  c.dropout = 0.0;
  c.src_vocab_size = 9, c.trg_vocab_size = 9;
  c.max_length = 40;
  return std::make_unique<Transformer>(c, seed);
}

inline const std::vector<Ids> kSources = {{3, 4, 5}, {6}, {5, 5, 3, 4, 6, 3}, {4, 3, 7, 8}, {8, 6}};

// The decoder's logits (V) at the last position of [BOS] + tokens, source + EOS encoded.
inline std::vector<double> full_logits(const Transformer& m, const Ids& source, const Ids& tokens) {
  NoGradGuard ng;
  const ModelConfig& c = m.config();
  Ids src = source;
  src.push_back(static_cast<int32_t>(c.eos_id));
  Ids input = {static_cast<int32_t>(c.bos_id)};
  input.insert(input.end(), tokens.begin(), tokens.end());
  const Tensor logits = m.forward(Tensor::from_vector<int32_t>({1, std::ssize(src)}, src),
                                  Tensor::from_vector<int32_t>({1, std::ssize(input)}, input))
                            .contiguous();  // (1, T, V)
  const int64_t V = c.trg_vocab_size;
  const float* last = logits.data<float>() + (std::ssize(input) - 1) * V;
  return {last, last + V};
}

}  // namespace tfm::decode::testing
