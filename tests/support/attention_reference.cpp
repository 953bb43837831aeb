#include "support/attention_reference.h"

#include "tfm/autograd/grad_mode.h"

namespace tfm::testing {

std::vector<std::vector<float>> forward_cross_attention(const Transformer& model, const Ids& src,
                                                        const Ids& tokens) {
  NoGradGuard no_grad;
  const ModelConfig& c = model.config();
  Ids in = {static_cast<int32_t>(c.bos_id)};
  in.insert(in.end(), tokens.begin(), tokens.end());
  AttentionWeights w;
  model.forward(source_batch({&src}, c.seq_format()),
                Tensor::from_vector<int32_t>({1, static_cast<int64_t>(in.size())}, in), &w);
  const Tensor a = w.decoder_cross.back().contiguous();  // (1, H, T + 1, S)
  const int64_t H = a.size(1), T1 = a.size(2), S = a.size(3);
  const float* p = a.data<float>();
  std::vector<std::vector<float>> rows(tokens.size(), std::vector<float>(S));
  for (int64_t t = 0; t + 1 < T1; ++t)
    for (int64_t s = 0; s < S; ++s) {
      double sum = 0;  // in double: the reference's own rounding stays far below the tolerance
      for (int64_t h = 0; h < H; ++h) sum += p[(h * T1 + t) * S + s];
      rows[t][s] = static_cast<float>(sum / static_cast<double>(H));
    }
  return rows;
}

}  // namespace tfm::testing
