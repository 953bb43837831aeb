#include "tfm/model/score.h"

#include "tfm/autograd/grad_mode.h"
#include "tfm/ops/host.h"
#include "tfm/ops/index.h"
#include "tfm/ops/shape.h"
#include "tfm/ops/softmax.h"

namespace tfm {

std::vector<std::vector<float>> score_pairs_per_token(
    const Transformer& model, const std::vector<Ids>& src, const std::vector<Ids>& trg,
    const BatchLimits& limits, const std::stop_token& stop, int64_t start_id) {
  const ModelConfig& c = model.config();
  SeqFormat format = c.seq_format();
  if (start_id >= 0) format.bos_id = start_id;
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
  std::vector<std::vector<float>> scores(trg.size());
  for (const std::vector<size_t>& batch : length_batches(lengths, limits)) {
    TFM_CHECK(!stop.stop_requested()) << "score: cancelled";
    std::vector<const Ids*> bs, bt;
    for (size_t i : batch) {
      if (with_src) bs.push_back(&src[i]);
      bt.push_back(&trg[i]);
    }
    Batch b = make_batch(bs, bt, format);
    const Tensor logp = log_softmax(model.forward(b.src, b.trg_in));  // (B, T, V)
    const int64_t T = b.trg_out.size(1), V = c.trg_vocab_size;
    // log p(reference token) at every position, (B·T): the only numbers the host needs.
    const HostView<float> lp = to_host<float>(
        pick_columns(reshape(logp, {-1, V}), to_device(reshape(b.trg_out, {-1}), logp.device())));
    for (size_t i = 0; i < bt.size(); ++i) {
      const auto n = static_cast<int64_t>(bt[i]->size()) + 1;  // + EOS
      const auto* row = &lp[static_cast<size_t>(static_cast<int64_t>(i) * T)];
      scores[batch[i]].assign(row, row + n);
    }
  }
  return scores;
}

std::vector<double> score_pairs(const Transformer& model, const std::vector<Ids>& src,
                                const std::vector<Ids>& trg, const BatchLimits& limits) {
  std::vector<double> totals;
  for (const std::vector<float>& lp : score_pairs_per_token(model, src, trg, limits)) {
    double s = 0;
    for (float x : lp) s += x;
    totals.push_back(s);
  }
  return totals;
}

}  // namespace tfm
