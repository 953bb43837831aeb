#include "tfm/model/score.h"

#include <algorithm>
#include <numeric>

#include "tfm/autograd/grad_mode.h"
#include "tfm/ops/softmax.h"

namespace tfm {

std::vector<double> score_pairs(const Transformer& model, const std::vector<Ids>& src,
                                const std::vector<Ids>& trg, int64_t batch_size) {
  const ModelConfig& c = model.config();
  const bool with_src = c.has_encoder();
  TFM_CHECK(!with_src || src.size() == trg.size())
      << "score: " << src.size() << " sources for " << trg.size() << " targets";
  TFM_CHECK(batch_size > 0) << "score: batch size must be positive";
  if (with_src && c.seq_format().source_specials() == 0) {
    for (size_t i = 0; i < src.size(); ++i)
      TFM_CHECK(!src[i].empty()) << "score: source " << i + 1
                                 << " is empty and the model adds neither BOS nor EOS to a "
                                 << "source (source_bos and source_eos are false)";
  }
  NoGradGuard no_grad;
  std::vector<size_t> order(trg.size());
  std::iota(order.begin(), order.end(), 0);
  // Similar lengths together: less padding, and results do not depend on the batching.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const size_t la = trg[a].size() + (with_src ? src[a].size() : 0);
    const size_t lb = trg[b].size() + (with_src ? src[b].size() : 0);
    return la < lb;
  });
  std::vector<double> scores(trg.size(), 0.0);
  for (size_t start = 0; start < order.size(); start += batch_size) {
    const size_t end = std::min(order.size(), start + static_cast<size_t>(batch_size));
    std::vector<const Ids*> bs, bt;
    for (size_t i = start; i < end; ++i) {
      if (with_src) bs.push_back(&src[order[i]]);
      bt.push_back(&trg[order[i]]);
    }
    Batch b = make_batch(bs, bt, c.seq_format());
    Tensor logp = log_softmax(model.forward(b.src, b.trg_in));  // (B, T, V)
    const float* lp = logp.data<float>();
    const int32_t* out = b.trg_out.data<int32_t>();
    const int64_t T = b.trg_out.size(1), V = c.trg_vocab_size;
    for (size_t i = 0; i < bt.size(); ++i) {
      double s = 0;
      const int64_t n = static_cast<int64_t>(bt[i]->size()) + 1;  // + EOS
      for (int64_t t = 0; t < n; ++t) {
        const int64_t row = static_cast<int64_t>(i) * T + t;
        s += lp[row * V + out[row]];
      }
      scores[order[start + i]] = s;
    }
  }
  return scores;
}

}  // namespace tfm
