#include "tfm/model/score.h"

#include "tfm/autograd/grad_mode.h"
#include "tfm/ops/host.h"
#include "tfm/ops/index.h"
#include "tfm/ops/shape.h"
#include "tfm/ops/softmax.h"

namespace tfm {

std::vector<double> score_pairs(const Transformer& model, const std::vector<Ids>& src,
                                const std::vector<Ids>& trg, const BatchLimits& limits) {
  const ModelConfig& c = model.config();
  const bool with_src = c.has_encoder();
  TFM_CHECK(!with_src || src.size() == trg.size())
      << "score: " << src.size() << " sources for " << trg.size() << " targets";
  if (with_src && c.seq_format().source_specials() == 0) {
    for (size_t i = 0; i < src.size(); ++i)
      TFM_CHECK(!src[i].empty()) << "score: source " << i + 1
                                 << " is empty and the model adds neither BOS nor EOS to a "
                                 << "source (source_bos and source_eos are false)";
  }
  NoGradGuard no_grad;
  // Similar lengths together: less padding, and results do not depend on the batching.
  std::vector<int64_t> lengths(trg.size());
  for (size_t i = 0; i < trg.size(); ++i)
    lengths[i] = static_cast<int64_t>(trg[i].size() + (with_src ? src[i].size() : 0));
  std::vector<double> scores(trg.size(), 0.0);
  for (const std::vector<size_t>& batch : length_batches(lengths, limits)) {
    std::vector<const Ids*> bs, bt;
    for (size_t i : batch) {
      if (with_src) bs.push_back(&src[i]);
      bt.push_back(&trg[i]);
    }
    Batch b = make_batch(bs, bt, c.seq_format());
    const Tensor logp = log_softmax(model.forward(b.src, b.trg_in));  // (B, T, V)
    const int64_t T = b.trg_out.size(1), V = c.trg_vocab_size;
    // log p(reference token) at every position, (B·T): the only numbers the host needs.
    const HostView<float> lp = to_host<float>(
        pick_columns(reshape(logp, {-1, V}), to_device(reshape(b.trg_out, {-1}), logp.device())));
    for (size_t i = 0; i < bt.size(); ++i) {
      double s = 0;
      const int64_t n = static_cast<int64_t>(bt[i]->size()) + 1;  // + EOS
      for (int64_t t = 0; t < n; ++t) {
        const int64_t row = static_cast<int64_t>(i) * T + t;
        s += lp[static_cast<size_t>(row)];
      }
      scores[batch[i]] = s;
    }
  }
  return scores;
}

}  // namespace tfm
