#include "tfm/train/validate.h"

#include <cmath>

#include "tfm/autograd/grad_mode.h"
#include "tfm/core/device_copy.h"
#include "tfm/data/batcher.h"
#include "tfm/ops/cross_entropy.h"

namespace tfm {

double ValidLoss::perplexity() const {
  return std::exp(loss());
}

ValidLoss validation_loss(Transformer& model, const std::vector<Example>& examples,
                          int64_t batch_tokens) {
  ValidLoss r;
  if (examples.empty()) return r;
  const ModelConfig& c = model.config();
  BatcherOptions bo;
  bo.batch_tokens = batch_tokens;
  bo.shuffle = false;
  bo.bucket_batches = 0;
  bo.format = c.seq_format();
  bo.sources = c.has_encoder();
  Batcher batcher(examples, bo);
  const bool was_training = model.training();
  model.set_training(false);
  NoGradGuard no_grad;
  for (const auto& indices : batcher.plan(0)) {
    const Batch b = batcher.make(indices);
    const Tensor logits = model.forward(b.src, b.trg_in);  // (B, T, V)
    const CrossEntropyResult ce =
        softmax_cross_entropy(logits, to_device(b.trg_out, logits.device()), 0.0, c.pad_id);
    r.sentences += static_cast<int64_t>(indices.size());
    r.tokens += ce.tokens;
    r.correct += ce.correct;
    r.nll_sum += ce.nll_sum;
  }
  model.set_training(was_training);
  return r;
}

}  // namespace tfm
