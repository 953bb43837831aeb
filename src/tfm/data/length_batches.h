// Inference batching, written once: items sorted by length (similar lengths together, so little
// padding) and cut into batches under a sentence and a padded-token limit. Translator, scoring
// and the validation BLEU of training all batch through here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tfm {

struct BatchLimits {
  int64_t max_sentences = 32;  // > 0
  int64_t max_tokens = 0;      // padded tokens (count × longest); 0: no limit
};

// Indices into `lengths`, stably sorted by length and cut into consecutive batches: a batch
// grows while it has fewer than max_sentences items and (count + 1) × its longest length stays
// within max_tokens. A single item longer than max_tokens still gets a batch of its own. The cut
// depends only on the lengths and the limits, so results that do not depend on the batch
// composition do not depend on anything else either.
std::vector<std::vector<size_t>> length_batches(const std::vector<int64_t>& lengths,
                                                const BatchLimits& limits);

}  // namespace tfm
