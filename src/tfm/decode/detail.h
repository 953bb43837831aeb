// Helpers shared by the searches (internal to decode/).
#pragma once

#include <limits>
#include <vector>

#include "tfm/decode/search.h"
#include "tfm/ops/decode_steps.h"

namespace tfm::decode::detail {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Checks the sources and prefixes against the model and the options (lengths, ids, flags).
void check_inputs(const Transformer& model, const std::vector<Ids>& sources,
                  const SearchOptions& options, const std::vector<Ids>& prefixes = {});
// Sentence i's prefix (empty when prefixes is).
const Ids& prefix_of(const std::vector<Ids>& prefixes, size_t i);
// Source positions the encoder reads for a source of src_len ids (with BOS/EOS framing): the
// width of a hypothesis' attention rows.
int64_t framed_length(const ModelConfig& config, int64_t src_len);
// Encodes the sources (each framed as the config says, padded) and returns the state with one row
// per source, its self-attention caches to be allocated once for max_len positions (the longest
// output). A decoder-only model's sources are empty (check_inputs) and nothing is encoded.
DecoderState start(const Transformer& model, const std::vector<const Ids*>& sources,
                   int64_t max_len);
// Feeds tokens (one per row) and returns log-probabilities f32 (rows, V), contiguous. With
// `attention`, also the last decoder layer's cross-attention averaged over heads, f32 (rows, S)
// contiguous, S the batch's padded source length (padding gets 0).
// With `options`, process_logits first (history: each row's tokens so far).
Tensor step_log_probs(const Transformer& model, DecoderState& state,
                      const std::vector<int32_t>& tokens, Tensor* attention = nullptr,
                      const std::vector<const Ids*>& history = {},
                      const SearchOptions* options = nullptr);
// The same step's logits f32 (rows, V) before the log-softmax (beam search normalises them
// inside top_k_log_probs).
Tensor step_logits(const Transformer& model, DecoderState& state,
                   const std::vector<int32_t>& tokens, Tensor* attention = nullptr);
// CTranslate2's logits processors on logits (rows, V), in its order, given each row's tokens so
// far (history[r]): the repetition penalty on the tokens a row holds, then -inf for the tokens
// that would repeat an n-gram (no_repeat_ngram_size) and for options.suppress_sequences (a
// one-token sequence's token in every row, a longer one's last token in a row that ends with the
// rest). The logits themselves when none of these options is set.
Tensor process_logits(const Tensor& logits, const std::vector<const Ids*>& history,
                      const SearchOptions& options);
// Processed logits (rows, V) as SearchOptions::return_logits reports them: a host copy, row-major,
// with the end tokens disabled while generated < min_length, and every disabled token at the
// lowest float instead of -inf (as CTranslate2 disables tokens in the logits it returns); PAD and
// BOS as the model gives them.
std::vector<float> reported_logits(const Tensor& logits, const Ids& ends, int64_t generated,
                                   const SearchOptions& options);
// Appends to `out` the tokens that would complete an n-gram of seq already in seq: each token
// that follows an earlier occurrence of seq's last n - 1 tokens (n > 0).
void ngram_bans(const Ids& seq, int64_t n, std::vector<int32_t>& out);
// The tokens that end a hypothesis: options.end_ids, or the model's EOS alone.
Ids end_ids(const ModelConfig& config, const SearchOptions& options);
// state.reorder(rows), skipped when rows keeps every row in place (greedy and sampling while no
// sentence has finished): a reorder copies every cache, O(T) a step.
void reorder(DecoderState& state, const std::vector<int64_t>& rows);
// What the conventions allow after `generated` tokens (ops/decode_steps.h, mask_step_rows):
// PAD/BOS never, EOS not before min_length, nothing but EOS at the last position (EOS: the
// first end id).
// A step inside the sentence's target prefix (generated < prefix_length) is left as it is.
StepRule step_rule(int64_t generated, int64_t prefix_length, int64_t min_length,
                   int64_t max_length);
SpecialIds special_ids(const ModelConfig& config, const SearchOptions& options);
// Whether a row under `rule` may take end token `t` other than the first (end_ids): only where
// the rule allows EOS and does not force it.
inline bool other_end_allowed(StepRule rule) {
  return rule == StepRule::normal || rule == StepRule::keep;
}
// Reports a chosen token to options.on_step (nothing without one); true: end the sentence there.
inline bool report_step(const SearchOptions& options, const Step& step) {
  return options.on_step && (*options.on_step)(step);
}
// Sorts best first: score descending, then shorter, then lexicographic (a total order, so the
// result does not depend on the order hypotheses were found in).
void sort_hypotheses(NBest& hyps);

}  // namespace tfm::decode::detail
