// Validation loss: the model's teacher-forced cross entropy on held-out pairs.
#pragma once

#include <cstdint>
#include <vector>

#include "tfm/data/corpus.h"
#include "tfm/model/transformer.h"

namespace tfm {

struct ValidLoss {
  int64_t sentences = 0, tokens = 0, correct = 0;  // tokens: targets incl. EOS
  double nll_sum = 0;
  double loss() const { return tokens ? nll_sum / tokens : 0.0; }  // nats per token
  double perplexity() const;                                       // exp(loss)
  double accuracy() const { return tokens ? static_cast<double>(correct) / tokens : 0.0; }
};

// Runs the model without dropout and without recording over `examples` in batches of at most
// `batch_tokens` padded tokens (the Batcher's rule), in corpus order. Leaves the model's training
// flag as it found it.
ValidLoss validation_loss(Transformer& model, const std::vector<Example>& examples,
                          int64_t batch_tokens);

}  // namespace tfm
