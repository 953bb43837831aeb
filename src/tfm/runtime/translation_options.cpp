// The one validator of the translation options. Each option is one entry of a table: its field
// name (what the speller spells) and what its value may be, given the model, the caps and the
// options before it. A new option is a new entry; the structure test (check_options.py) fails
// when a field of TranslationOptions or TranslatorOptions has none, or when a range check of one
// appears outside this file.
#include "tfm/runtime/translation_options.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "tfm/core/check.h"
#include "tfm/core/parallel.h"
#include "tfm/core/validate.h"
#ifdef TFM_WITH_CUDA
#include "tfm/core/cuda/runtime.h"
#endif

namespace tfm {

namespace {

// What an entry's check sees besides the options: the spelling of names, and the model and the
// caps (translation options only).
struct Context {
  const OptionSpeller& speller;
  const ModelInfo* model = nullptr;
  const TranslationLimits* limits = nullptr;

  std::string operator()(std::string_view field) const { return speller(field); }
  // The target vocabulary less PAD and BOS, which are never generated.
  int64_t generable() const { return std::max<int64_t>(1, model->trg_vocab_size - 2); }
  // A model converted from Transformers that decodes by generate()'s rules (docs/convert.md):
  // its own rule, unless the call asks for tfm's (search_rule "tfm").
  bool generate(const TranslationOptions& o) const {
    return model->search_rule == "transformers" && o.search_rule != "tfm";
  }
  bool multilingual() const {
    return model->family == "nllb" || model->family == "m2m_100" || model->family == "mbart";
  }
};

template <typename Options>
struct Entry {
  std::string_view field;
  void (*check)(const Options& o, const Context& n);
};

constexpr int64_t kMaxTokens = int64_t{1} << 20;  // more than any model's positions

using T = TranslationOptions;

// One entry per field of TranslationOptions, in the order its checks should run (a width before
// what depends on it).
const Entry<T> kTranslation[] = {
    {"search_rule",
     [](const T& o, const Context& n) {
       TFM_CHECK_ARG(o.search_rule.empty() || o.search_rule == "model" || o.search_rule == "tfm")
           << n("search_rule") << " must be \"model\" or \"tfm\" (got \"" << o.search_rule << "\")";
       TFM_CHECK_ARG(o.search_rule != "tfm" || o.target_lang.empty())
           << n("target_lang") << " with " << n("search_rule")
           << " \"tfm\": give the target language's token as the target prefix, as "
           << "CTranslate2 takes it";
     }},
    {"beam_size",
     [](const T& o, const Context& n) {
       require_at_least(n("beam_size"), o.beam_size, 1);
       TFM_CHECK_ARG(o.beam_size <= n.generable())
           << n("beam_size") << " " << o.beam_size
           << " is larger than the model's target vocabulary (" << n.generable()
           << " tokens it can generate)";
       const int64_t cap = n.limits->max_beam_size;
       TFM_CHECK_ARG(cap == 0 || o.beam_size <= cap)
           << n("beam_size") << " must be at most " << cap << " here (got " << o.beam_size << ")";
     }},
    {"search",
     [](const T& o, const Context& n) {
       TFM_CHECK_ARG(o.search != Search::sampling || o.beam_size == 1)
           << n("search=sampling") << " needs " << n("beam_size") << " 1 (got " << o.beam_size
           << ")";
       TFM_CHECK_ARG(o.search != Search::greedy || o.beam_size == 1)
           << n("beam_size") << " " << o.beam_size << " needs " << n("search=beam")
           << " (greedy search keeps one hypothesis)";
       TFM_CHECK_ARG(o.search != Search::sampling || !n.generate(o))
           << n("search=sampling") << ": a converted model decodes greedily or by beam search, "
           << "as its generate() does";
     }},
    {"return_alternatives",
     [](const T& o, const Context& n) {
       TFM_CHECK_ARG(!o.return_alternatives || !n.generate(o))
           << n("return_alternatives") << ": a converted model decodes by generate()'s rules";
     }},
    {"min_alternative_expansion_prob",
     [](const T& o, const Context& n) {
       require_in_range(n("min_alternative_expansion_prob"), o.min_alternative_expansion_prob, 0.0,
                        1.0);
     }},
    {"num_hypotheses",
     [](const T& o, const Context& n) {
       require_at_least(n("num_hypotheses"), o.num_hypotheses, 1);
       TFM_CHECK_ARG(o.return_alternatives ? o.num_hypotheses <= n.generable()
                                           : o.num_hypotheses <= o.beam_size)
           << n("num_hypotheses") << " " << o.num_hypotheses << " exceeds " << n("beam_size") << " "
           << o.beam_size << " (a search returns at most its beam's hypotheses)";
     }},
    {"length_penalty",
     [](const T& o, const Context& n) {
       // generate()'s length penalty is an exponent that may be negative (shorter outputs).
       require_in_range(n("length_penalty"), o.length_penalty, n.generate(o) ? -10.0 : 0.0, 10.0);
     }},
    {"normalize_scores",
     [](const T& o, const Context& n) {
       TFM_CHECK_ARG(!o.normalize_scores || !n.generate(o))
           << n("normalize_scores") << ": a converted model ranks as generate() does, by "
           << "log-probability / length^alpha, alpha being " << n("length_penalty")
           << " (1: the plain normalisation)";
     }},
    {"length_penalty_form",
     [](const T& o, const Context& n) {
       TFM_CHECK_ARG(o.length_penalty_form == LengthPenalty::gnmt || !n.generate(o))
           << n("length_penalty_form") << ": a converted model ranks as generate() does";
     }},
    {"max_length_factor",
     [](const T& o, const Context& n) {
       require_in_range(n("max_length_factor"), o.max_length_factor, 0.0, 1000.0);
     }},
    {"max_length_extra",
     [](const T& o, const Context& n) {
       require_in_range(n("max_length_extra"), o.max_length_extra, 0, 1'000'000);
     }},
    {"max_decoding_length",
     [](const T& o, const Context& n) {
       require_in_range(n("max_decoding_length"), o.max_decoding_length, 1, kMaxTokens);
     }},
    {"max_new_tokens",
     [](const T& o, const Context& n) {
       require_in_range(n("max_new_tokens"), o.max_new_tokens, 0, kMaxTokens);
     }},
    {"min_decoding_length",
     [](const T& o, const Context& n) {
       require_in_range(n("min_decoding_length"), o.min_decoding_length, 0, n.model->max_length);
     }},
    // A converted model renormalises in its own search too (transformers_search.cpp).
    {"renormalize_min_length", [](const T&, const Context&) {}},
    {"patience",
     [](const T& o, const Context& n) {
       require_in_range(n("patience"), o.patience, 0.0, 1000.0);
       TFM_CHECK_ARG(o.patience == 0.0 || !n.generate(o))
           << n("patience") << ": a converted model stops its beams as generate() does";
       const double finished = std::round(static_cast<double>(o.beam_size) * o.patience);
       TFM_CHECK_ARG(o.patience == 0.0 || o.search == Search::sampling || o.return_alternatives ||
                     static_cast<double>(o.num_hypotheses) <= finished)
           << n("num_hypotheses") << " " << o.num_hypotheses << " exceeds " << n("beam_size")
           << " x " << n("patience") << " (" << finished
           << " hypotheses finish before a sentence stops)";
     }},
    {"score_prefix",
     [](const T& o, const Context& n) {
       TFM_CHECK_ARG(o.score_prefix || !n.generate(o))
           << n("score_prefix") << ": a converted model scores as generate() does";
     }},
    {"suppress_sequences",
     [](const T& o, const Context& n) {
       TFM_CHECK_ARG(o.suppress_sequences.empty() || !n.generate(o))
           << n("suppress_sequences") << ": not for a converted model (generate()'s rules)";
       for (size_t i = 0; i < o.suppress_sequences.size(); ++i) {
         const auto& seq = o.suppress_sequences[i];
         TFM_CHECK_ARG(!seq.empty()) << n("suppress_sequences") << " " << i + 1 << " is empty";
         for (int64_t id : seq)
           TFM_CHECK_ARG(id >= 0 && id < n.model->trg_vocab_size)
               << n("suppress_sequences") << " " << i + 1 << ": token id " << id
               << " is outside the target vocabulary [0, " << n.model->trg_vocab_size << ")";
       }
     }},
    {"repetition_penalty",
     [](const T& o, const Context& n) {
       require_in_range(n("repetition_penalty"), o.repetition_penalty, 0.0, 1000.0,
                        /*lo_open=*/true);
       TFM_CHECK_ARG(o.repetition_penalty == 1.0 || !n.generate(o))
           << n("repetition_penalty") << ": a converted model decodes by generate()'s rules";
     }},
    {"no_repeat_ngram_size",
     [](const T& o, const Context& n) {
       require_in_range(n("no_repeat_ngram_size"), o.no_repeat_ngram_size, -1, kMaxTokens);
     }},
    {"end_token",
     [](const T& o, const Context& n) {
       const bool eos = o.end_token.size() == 1 && o.end_token[0] == n.model->eos_id;
       TFM_CHECK_ARG(o.end_token.empty() || eos || !n.generate(o))
           << n("end_token") << ": a converted model ends on its EOS, as generate() does";
       for (int64_t id : o.end_token)
         TFM_CHECK_ARG(id >= 0 && id < n.model->trg_vocab_size &&
                       (id == n.model->eos_id || (id != n.model->pad_id && id != n.model->bos_id)))
             << n("end_token") << ": token id " << id << " is outside the target vocabulary [0, "
             << n.model->trg_vocab_size << ") or PAD/BOS, which are never generated";
     }},
    {"max_input_length",
     [](const T& o, const Context& n) {
       // Room for one source token besides the framing the model adds.
       const int64_t framing = int64_t{n.model->source_bos} + int64_t{n.model->source_eos};
       TFM_CHECK_ARG(o.max_input_length == 0 ||
                     (o.max_input_length > framing && o.max_input_length <= kMaxTokens))
           << n("max_input_length") << " must be 0 (no limit) or in [" << framing + 1 << ", "
           << kMaxTokens << "] (the source's framing takes " << framing << "; got "
           << o.max_input_length << ")";
     }},
    {"return_end_token", [](const T&, const Context&) {}},
    {"coverage_penalty",
     [](const T& o, const Context& n) {
       require_in_range(n("coverage_penalty"), o.coverage_penalty, 0.0, 100.0);
       TFM_CHECK_ARG(o.coverage_penalty == 0.0 || !n.generate(o))
           << n("coverage_penalty") << ": a converted model decodes by generate()'s rules";
       TFM_CHECK_ARG(o.coverage_penalty == 0.0 || o.search != Search::sampling)
           << n("coverage_penalty") << ": greedy and beam search only, not sampling";
       TFM_CHECK_ARG(o.coverage_penalty == 0.0 || !n.model->decoder_only)
           << n("coverage_penalty") << ": a decoder-only model has no source to cover";
     }},
    {"force_end_token",
     [](const T& o, const Context& n) {
       TFM_CHECK_ARG(o.force_end_token || !n.generate(o))
           << n("force_end_token") << ": a converted model decodes by generate()'s rules";
     }},
    {"sampling_temperature",
     [](const T& o, const Context& n) {
       require_in_range(n("sampling_temperature"), o.sampling_temperature, 0.0, 1e6);
     }},
    {"sampling_topk",
     [](const T& o, const Context& n) {
       require_in_range(n("sampling_topk"), o.sampling_topk, 0, n.model->trg_vocab_size);
     }},
    {"sampling_topp",
     [](const T& o, const Context& n) {
       require_in_range(n("sampling_topp"), o.sampling_topp, 0.0, 1.0, /*lo_open=*/true);
     }},
    {"seed", [](const T&, const Context&) {}},
    {"attention_framing", [](const T&, const Context&) {}},
    {"return_attention",
     [](const T& o, const Context& n) {
       TFM_CHECK_ARG(!o.return_attention || !n.model->decoder_only)
           << n("return_attention") << ": a decoder-only model has no cross-attention to return";
     }},
    // The searches that choose one token at a time report it (decode::SearchOptions::on_step):
    // greedy search (tfm's and generate()'s) and sampling; beam search only knows its
    // hypotheses at the end.
    {"step_callback",
     [](const T& o, const Context& n) {
       if (!o.step_callback) return;
       TFM_CHECK_ARG(o.beam_size == 1)
           << n("step_callback") << " needs greedy search or sampling (" << n("beam_size")
           << " 1, got " << o.beam_size << "): beam search knows its hypotheses only at the end";
       TFM_CHECK_ARG(!o.return_alternatives)
           << n("step_callback") << " with " << n("return_alternatives")
           << ": the alternatives are expanded apart";
       TFM_CHECK_ARG(o.prefix_bias_beta == 0.0)
           << n("step_callback") << " with " << n("prefix_bias_beta")
           << " > 0: biased decoding is a beam search (as in CTranslate2)";
     }},
    {"return_logits_vocab",
     [](const T& o, const Context& n) {
       TFM_CHECK_ARG(!o.return_logits_vocab || !n.generate(o))
           << n("return_logits_vocab") << ": a converted model decoding by generate()'s rules "
           << "keeps no logits (" << n("search_rule") << " \"tfm\" decodes it by CTranslate2's)";
       TFM_CHECK_ARG(!o.return_logits_vocab || !o.return_alternatives)
           << n("return_logits_vocab") << " with " << n("return_alternatives")
           << ": tfm keeps the logits of greedy, beam and sampling searches only";
     }},
    {"return_scores", [](const T&, const Context&) {}},  // any value
    {"replace_unknowns",
     [](const T& o, const Context& n) {
       TFM_CHECK_ARG(!o.replace_unknowns || !n.model->decoder_only)
           << n("replace_unknowns") << ": a decoder-only model has no source to copy from";
       TFM_CHECK_ARG(!o.replace_unknowns || !n.generate(o))
           << n("replace_unknowns") << ": a converted model decoding by generate()'s rules ("
           << n("search_rule") << " \"tfm\" decodes it by CTranslate2's)";
     }},
    {"prefix_bias_beta",
     [](const T& o, const Context& n) {
       require_in_range(n("prefix_bias_beta"), o.prefix_bias_beta, 0.0, 1.0, /*lo_open=*/false,
                        /*hi_open=*/true);
       if (o.prefix_bias_beta == 0.0) return;
       TFM_CHECK_ARG(!o.return_alternatives)
           << n("prefix_bias_beta") << " > 0 with " << n("return_alternatives")
           << ": biased decoding is not compatible with alternatives (as in CTranslate2)";
       TFM_CHECK_ARG(o.search != Search::sampling)
           << n("prefix_bias_beta") << " > 0 with " << n("search=sampling")
           << ": biased decoding is a beam search (beam_size 1 included)";
       TFM_CHECK_ARG(!n.model->decoder_only)
           << n("prefix_bias_beta") << ": a decoder-only model's prompt is no prefix to bias "
           << "towards";
       TFM_CHECK_ARG(!n.generate(o))
           << n("prefix_bias_beta") << ": a converted model decoding by generate()'s rules ("
           << n("search_rule") << " \"tfm\" decodes it by CTranslate2's)";
     }},
    // The codes themselves are the tokenizer's to resolve (Translator::Impl::language_id).
    {"target_lang",
     [](const T& o, const Context& n) {
       TFM_CHECK_ARG(o.target_lang.empty() || n.multilingual())
           << n("target_lang") << " \"" << o.target_lang << "\": " << n.model->directory
           << " is not a multilingual converted model (NLLB, M2M100, mBART)";
     }},
    {"source_lang",
     [](const T& o, const Context& n) {
       TFM_CHECK_ARG(o.source_lang.empty() || n.multilingual())
           << n("source_lang") << " \"" << o.source_lang << "\": " << n.model->directory
           << " is not a multilingual converted model (NLLB, M2M100, mBART)";
     }},
};

using R = TranslatorOptions;

// One entry per field of TranslatorOptions.
const Entry<R> kTranslator[] = {
    {"device",
     [](const R& o, const Context& n) { runtime::check_device_available(o.device, n("device")); }},
    {"compute_type",
     [](const R& o, const Context& n) {
       try {
         resolve_compute_type(o.compute_type, o.device, /*training=*/false);
       } catch (const Error& e) {
         TFM_FAIL_ARG() << n("compute_type") << ": " << e.message();
       }
     }},
    {"intra_threads",
     [](const R& o, const Context& n) {
       check_thread_count(n("intra_threads").c_str(), o.intra_threads);
     }},
    {"inter_threads",
     [](const R& o, const Context& n) {
       require_in_range(n("inter_threads"), int64_t{o.inter_threads}, 1, 1024);
       TFM_CHECK_ARG(o.device == Device::cpu || o.inter_threads == 1)
           << n("inter_threads") << " must be 1 on " << device_name(o.device) << " (got "
           << o.inter_threads << "): batches run one at a time on the device's stream";
     }},
    {"max_batch_size",
     [](const R& o, const Context& n) {
       require_in_range(n("max_batch_size"), o.max_batch_size, 1, kMaxTokens);
     }},
    {"max_batch_tokens",
     [](const R& o, const Context& n) {
       require_in_range(n("max_batch_tokens"), o.max_batch_tokens, 0, int64_t{1} << 40);
     }},
    {"max_batch_delay_ms",
     [](const R& o, const Context& n) {
       require_in_range(n("max_batch_delay_ms"), o.max_batch_delay_ms, 0, 3'600'000);
     }},
    {"max_queued_requests",
     [](const R& o, const Context& n) {
       require_in_range(n("max_queued_requests"), o.max_queued_requests, 0, int64_t{1} << 30);
     }},
    {"on_batch", [](const R&, const Context&) {}},
};

}  // namespace

const char* length_penalty_name(LengthPenalty p) {
  return p == LengthPenalty::power ? "power" : "gnmt";
}

LengthPenalty parse_length_penalty(std::string_view name) {
  for (LengthPenalty p : {LengthPenalty::gnmt, LengthPenalty::power})
    if (name == length_penalty_name(p)) return p;
  TFM_FAIL_ARG() << "unknown length penalty form '" << name << "' (expected gnmt or power)";
  return LengthPenalty::gnmt;
}

void validate_translation_options(const TranslationOptions& options, const ModelInfo& model,
                                  const OptionSpeller& name, const TranslationLimits& limits) {
  const Context context{name, &model, &limits};
  for (const auto& e : kTranslation) e.check(options, context);
}

void validate_translator_options(const TranslatorOptions& options, const OptionSpeller& name) {
  const Context context{name};
  for (const auto& e : kTranslator) e.check(options, context);
}

void validate_stream_options(const StreamOptions& options, const OptionSpeller& name) {
  require_in_range(name("read_ahead"), options.read_ahead, 1, kMaxTokens);
}

namespace runtime {

decode::SearchOptions to_search_options(const TranslationOptions& t) {
  decode::SearchOptions o;
  o.beam_size = t.beam_size;
  o.n_best = t.num_hypotheses;
  o.length_penalty = t.length_penalty;
  o.power_penalty = t.length_penalty_form == LengthPenalty::power;
  o.renormalize_min_length = t.renormalize_min_length;
  o.patience = t.patience;
  o.score_prefix = t.score_prefix;
  for (const auto& seq : t.suppress_sequences)
    o.suppress_sequences.emplace_back(seq.begin(), seq.end());
  o.repetition_penalty = t.repetition_penalty;
  o.no_repeat_ngram_size = std::max<int64_t>(t.no_repeat_ngram_size, 0);
  o.end_ids.assign(t.end_token.begin(), t.end_token.end());
  o.alternatives = t.return_alternatives;
  o.cut_at_max_length = !t.force_end_token;
  o.coverage_penalty = t.coverage_penalty;
  o.min_alternative_prob = t.min_alternative_expansion_prob;
  o.normalize = t.normalize_scores;
  o.max_length_a = t.max_length_factor;
  o.max_length_b = static_cast<double>(t.max_length_extra);
  o.max_length = t.max_decoding_length;
  o.max_new_tokens = t.max_new_tokens;
  o.min_length = t.min_decoding_length;
  o.sampling = t.search == Search::sampling;
  o.temperature = t.sampling_temperature;
  o.top_k = t.sampling_topk;
  o.top_p = t.sampling_topp;
  o.seed = t.seed;
  // replace_unknowns reads the attention (Translator::Impl::to_result).
  o.return_attention = t.return_attention || t.replace_unknowns;
  o.return_logits = t.return_logits_vocab;
  o.prefix_bias = t.prefix_bias_beta;
  o.scores = t.return_scores;
  return o;
}

std::vector<std::string> translation_option_fields() {
  std::vector<std::string> out;
  for (const auto& e : kTranslation) out.emplace_back(e.field);
  return out;
}

std::vector<std::string> translator_option_fields() {
  std::vector<std::string> out;
  for (const auto& e : kTranslator) out.emplace_back(e.field);
  return out;
}

void check_device_available(Device device, const std::string& name) {
  if (device == Device::cpu) return;
#ifdef TFM_WITH_CUDA
  TFM_CHECK_ARG(device == Device::cuda && cuda::has_device())
      << name << " " << device_name(device) << " is not available: " << cuda::no_device_reason();
#else
  TFM_FAIL_ARG() << name << " " << device_name(device)
                 << " is not available (this build has no CUDA backend: -DTFM_WITH_CUDA=ON)";
#endif
}

}  // namespace runtime
}  // namespace tfm
