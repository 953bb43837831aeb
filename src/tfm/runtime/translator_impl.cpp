#include "tfm/runtime/translator_impl.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string_view>

#include "tfm/core/allocator.h"
#include "tfm/core/profile.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/score.h"
#include "tfm/runtime/encode_prefix.h"
#include "tfm/runtime/generation_options.h"
#include "tfm/runtime/model_info_impl.h"
#include "tfm/runtime/translation_options.h"

namespace tfm {

Translator::Impl::Impl(const std::string& dir, TranslatorOptions o) : options_(std::move(o)) {
  profile::Scope scope(profile::Phase::load);
  validate_translator_options(options_);
  const int cores = omp_get_num_procs();
  if (options_.intra_threads == 0)
    options_.intra_threads = std::max(1, cores / options_.inter_threads);
  generation_ = read_generation_config(dir);
  // auto: the precision chosen when the model was converted, if one was.
  if (options_.compute_type == ComputeType::automatic && generation_ &&
      !generation_->compute_type.empty())
    options_.compute_type = parse_compute_type(generation_->compute_type);
  options_.compute_type =
      resolve_compute_type(options_.compute_type, options_.device, /*training=*/false);
  // The workers first, and the model loaded and packed on one of them: the threads that pack
  // the weights are those that translate, and the calling thread starts no OpenMP team of its
  // own (under OMP_WAIT_POLICY=active an idle team spins on a core the workers need).
  pool_ = std::make_unique<runtime::WorkerPool>(options_.inter_threads, options_.intra_threads);
  pool_
      ->submit([&] {
        // On the CPU each weight is bound as it is read, never held twice (not even in f32 and
        // packed). On a device the f32 weights move first and are prepared there (fp32: as
        // they are).
        if (options_.device == Device::cpu) {
          model_ = load_model_for_inference(dir, options_.compute_type);
          return;
        }
        model_ = load_model(dir);
        model_->to(options_.device);
        model_->bind_inference(options_.compute_type, std::nullopt, /*keep_f32=*/false);
      })
      .get();
  // The weights stay; decoding's tensors change shape every step: the cache is sized by the latter
  // (core/allocator.h), or a translating process holds twice its working set.
  if (options_.device == Device::cpu) cpu_allocator().mark_resident();
  const int64_t parameter_count = model_->parameter_count();
  const ModelConfig& c = model_->config();
  // Sizes and special ids against the config. A directory whose vocabulary does not fit still
  // translates ids (they need none); the text methods then fail with the reason.
  try {
    vocabs_ = load_checked_tokenizers(dir, c);
  } catch (const Error& e) {
    vocab_error_ = e.message();
    vocabs_ = {};
  }
  info_ = runtime::make_model_info(dir, c, parameter_count);
  if (vocabs_.src) {
    info_.src_vocab_path = vocabs_.src->path();
    info_.trg_vocab_path = vocabs_.trg->path();
  }
  queue_ = std::make_unique<runtime::RequestQueue>(*model_, *pool_, options_);
}

Translator::Impl::~Impl() = default;

void Translator::Impl::require_vocabs() const {
  TFM_CHECK(vocab_error_.empty()) << vocab_error_;
  TFM_CHECK(has_vocabs()) << info_.directory << " has no SentencePiece vocabulary ("
                          << kSharedVocabFile << ", or " << kSrcVocabFile << " + " << kTrgVocabFile
                          << ") and no " << kTokenizerConfigFile << ": translate token ids instead";
}

void Translator::Impl::require_decoder_only() const {
  TFM_CHECK(!config().has_encoder())
      << info_.directory << " is an encoder-decoder model: it translates (translate_batch); "
      << "generate_batch continues prompts with a decoder-only model";
}

void Translator::Impl::require_encoder() const {
  TFM_CHECK(config().has_encoder())
      << info_.directory << " is a decoder-only model: it continues prompts (generate_batch) "
      << "and scores targets, it does not translate (an encoder-decoder model does)";
}

// A source as the model reads it: a converted model's tokenizer adds its framing (</s>, the
// source language's token: HF's input_ids); an empty text stays empty (no hypotheses). Of a long
// text, only as much as the model reads is tokenised (encode_enough).
Ids Translator::Impl::encode_src(const std::string& text, const std::string& source_lang,
                                 size_t enough, bool* cut) const {
  if (!source_lang.empty()) language_id(source_lang, "source_lang");  // refused in the API's words
  profile::Scope scope(profile::Phase::spm);
  const Ids pieces = runtime::encode_enough(
      text, enough, [&](const std::string& t) { return vocabs_.src->encode(t); }, cut);
  return pieces.empty() ? pieces : vocabs_.src->frame_source(pieces, source_lang);
}

Ids Translator::Impl::encode_trg(const std::string& text, size_t enough, bool* cut) const {
  profile::Scope scope(profile::Phase::spm);
  return runtime::encode_enough(
      text, enough, [&](const std::string& t) { return vocabs_.trg->encode(t); }, cut);
}

Translator::Impl::EncodedTexts Translator::Impl::encode_texts(
    const std::vector<std::string>& texts, bool sources, const std::string& source_lang) const {
  EncodedTexts out;
  for (const auto& text : texts) {
    bool cut = false;
    const Ids ids = sources ? encode_src(text, source_lang, source_room(), &cut)
                            : encode_trg(text, target_room(), &cut);
    out.ids.emplace_back(ids.begin(), ids.end());
    out.cut.push_back(cut);
  }
  return out;
}

std::string Translator::Impl::decode_trg(const Ids& ids) const {
  profile::Scope scope(profile::Phase::spm);
  return vocabs_.trg->decode(ids);
}

decode::SearchOptions Translator::Impl::checked_search(const TranslationOptions& options) const {
  validate_translation_options(options, info_);
  decode::SearchOptions o = runtime::to_search_options(options);
  if (generation_ && options.search_rule == "tfm") {
    runtime::apply_tfm_rule(o, *generation_, config());
  } else if (generation_) {
    std::optional<int64_t> target;
    if (!options.target_lang.empty()) target = language_id(options.target_lang, "target_lang");
    runtime::apply_generation(o, *generation_, target, options.no_repeat_ngram_size >= 0);
  }
  return o;
}

std::shared_ptr<runtime::StepRelay> Translator::Impl::relay_steps(
    decode::SearchOptions& search, const TranslationOptions& options) const {
  std::function<std::string(int32_t)> piece;
  if (has_vocabs()) piece = [this](int32_t id) { return vocabs_.trg->ids_to_pieces({id}).front(); };
  return runtime::StepRelay::attach(search, options, std::move(piece));
}

TranslationOptions Translator::Impl::default_options() const {
  return generation_ ? runtime::generation_defaults(*generation_, config()) : TranslationOptions{};
}

int64_t Translator::Impl::language_id(const std::string& code, const char* what) const {
  TFM_CHECK_ARG(generation_ && generation_->target_language != TargetLanguage::none)
      << what << " \"" << code << "\": " << info_.directory
      << " is not a multilingual converted model (NLLB, M2M100, mBART)";
  TFM_CHECK_ARG(has_vocabs()) << what << " \"" << code << "\": " << info_.directory
                              << " has no tokenizer with language codes (" << kTokenizerConfigFile
                              << ")" << (vocab_error_.empty() ? "" : ": " + vocab_error_);
  const Tokenizer& t = std::string_view(what) == "source_lang" ? *vocabs_.src : *vocabs_.trg;
  try {
    return t.language_id(code);
  } catch (const Error& e) {  // the codes it knows, as an error in the option's name
    TFM_FAIL_ARG() << what << " \"" << code << "\": " << e.message();
  }
  return -1;
}

Ids Translator::Impl::narrow_ids(const std::vector<int64_t>& ids, bool source,
                                 const std::string& where) const {
  const int64_t n = source ? config().src_vocab_size : config().trg_vocab_size;
  for (int64_t id : ids)
    TFM_CHECK(id >= 0 && id < n) << where << ": token id " << id << " is outside the "
                                 << (source ? "source" : "target") << " vocabulary [0, " << n
                                 << ")";
  return Ids(ids.begin(), ids.end());
}

bool Translator::Impl::prepare_source(Ids& ids, const std::string& where,
                                      int64_t max_input_length) const {
  const ModelConfig& c = config();
  // PAD, BOS and EOS are no input: the model adds BOS/EOS itself as its config says, and a source
  // of tfm's own vocabulary never holds them. Only a converted model's tokenizer, which frames
  // its sources itself (<s> … </s>), gives the ones the config does not add: a converted model's
  // source ids are Transformers' input_ids, framing included, with or without its tokenizer.
  const bool framed =
      (vocabs_.src && vocabs_.src->converted()) || info_.search_rule == "transformers";
  const bool bos_ok = framed && !c.source_bos, eos_ok = framed && !c.source_eos;
  const auto special = [&](int64_t id) -> const char* {
    if (id == c.bos_id && !bos_ok) return "BOS";
    if (id == c.eos_id && !eos_ok) return "EOS";
    const bool pad_ok = (c.pad_id == c.bos_id && bos_ok) || (c.pad_id == c.eos_id && eos_ok);
    return id == c.pad_id && !pad_ok ? "PAD" : nullptr;
  };
  for (int64_t id : ids) {
    TFM_CHECK(id >= 0 && id < c.src_vocab_size)
        << where << ": token id " << id << " is outside the source vocabulary [0, "
        << c.src_vocab_size << ")";
    const char* what = special(id);
    TFM_CHECK(!what) << where << ": token id " << id << " is the model's " << what
                     << "; a source holds ordinary tokens (the model frames it itself)";
  }
  const int64_t positions =
      max_input_length > 0 ? std::min(max_input_length, c.max_length) : c.max_length;
  const auto limit = static_cast<size_t>(positions - c.seq_format().source_specials());
  if (ids.size() <= limit) return false;
  // A converted model's framing ends the source (</s>, a language token): cut before it.
  const size_t keep = vocabs_.src ? std::min(vocabs_.src->framing().suffix.size(), limit) : 0;
  std::copy(ids.end() - static_cast<std::ptrdiff_t>(keep), ids.end(),
            ids.begin() + static_cast<std::ptrdiff_t>(limit - keep));
  ids.resize(limit);
  return true;
}

void Translator::Impl::check_prefix(const Ids& prefix, const std::string& where,
                                    const TranslationOptions& o, bool cut, bool leading_bos) const {
  const ModelConfig& c = config();
  const bool by_option = o.max_decoding_length < c.max_length;
  const int64_t room = std::min(o.max_decoding_length, c.max_length) - 1;
  for (size_t i = leading_bos ? 1 : 0; i < prefix.size(); ++i) {
    const int64_t id = prefix[i];
    TFM_CHECK(id >= 0 && id < c.trg_vocab_size)
        << where << ": token id " << id << " is outside the target vocabulary [0, "
        << c.trg_vocab_size << ")";
    const char* special = id == c.pad_id   ? "PAD"
                          : id == c.bos_id ? "BOS"
                          : id == c.eos_id ? "EOS"
                                           : nullptr;
    TFM_CHECK(!special) << where << ": token id " << id << " is the model's " << special
                        << "; a prefix holds ordinary target tokens";
  }
  TFM_CHECK(!cut && static_cast<int64_t>(prefix.size()) <= room)
      << where << " has " << (cut ? "more than " : "") << prefix.size() << " tokens; "
      << (by_option ? "max_decoding_length " + std::to_string(o.max_decoding_length)
                    : "the model's " + std::to_string(c.max_length) + " positions")
      << (by_option ? " leaves" : " leave") << " room for " << room << " before EOS";
}

PreparedRequest Translator::Impl::empty_request(const TranslationOptions& options,
                                                Batching batching) const {
  PreparedRequest p;
  p.request.search = checked_search(options);
  p.relay = relay_steps(p.request.search, options);
  p.request.own = batching == Batching::own;
  p.return_end_token = options.return_end_token;
  p.attention_framing = options.attention_framing;
  p.return_attention = options.return_attention;
  p.return_scores = options.return_scores;
  if (options.replace_unknowns) {
    // The validator has refused it for a model without a source; here what it needs besides.
    const int64_t unk = has_vocabs() ? vocabs_.trg->special_ids().unk : -1;
    TFM_CHECK_ARG(unk >= 0) << "replace_unknowns: " << info_.directory
                            << " has no target vocabulary with an unknown token";
    p.unk_id = unk;
  }
  return p;
}

PreparedRequest Translator::Impl::translation(const std::vector<std::vector<int64_t>>& sources,
                                              const std::vector<std::vector<int64_t>>& prefixes,
                                              const TranslationOptions& options, Batching batching,
                                              const std::vector<char>& cut_sources,
                                              const std::vector<char>& cut_prefixes) const {
  require_encoder();
  PreparedRequest p = empty_request(options, batching);
  TFM_CHECK_ARG(prefixes.empty() || prefixes.size() == sources.size())
      << "target_prefix has " << prefixes.size() << " entries for " << sources.size()
      << " sources (one per source, empty for none)";
  p.request.prefixes.resize(prefixes.size());
  for (size_t i = 0; i < prefixes.size(); ++i) {
    const std::string where = "target_prefix " + std::to_string(i + 1);
    p.request.prefixes[i] = narrow_ids(prefixes[i], /*source=*/false, where);
    check_prefix(p.request.prefixes[i], where, options, i < cut_prefixes.size() && cut_prefixes[i]);
  }
  p.request.sources.resize(sources.size());
  p.truncated.resize(sources.size());
  p.widths.resize(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string where = "source " + std::to_string(i + 1);
    Ids& src = p.request.sources[i];
    src = narrow_ids(sources[i], /*source=*/true, where);
    p.truncated[i] = prepare_source(src, where, options.max_input_length) ||
                     (i < cut_sources.size() && cut_sources[i]);
    p.widths[i] = static_cast<int64_t>(src.size()) + config().seq_format().source_specials();
  }
  return p;
}

PreparedRequest Translator::Impl::generation(const std::vector<std::vector<int64_t>>& prompts,
                                             const TranslationOptions& options, Batching batching,
                                             const std::vector<char>& cut_prompts) const {
  require_decoder_only();
  PreparedRequest p = empty_request(options, batching);
  p.request.sources.resize(prompts.size());
  p.request.prefixes.resize(prompts.size());
  // A prompt may start with BOS, the token the decoder reads first (CTranslate2's start tokens,
  // "<|endoftext|>" for GPT-2): a converted model's decoder reads its prompt as given, so the
  // BOS stays there (outside the output: TransformersSearch); tfm's searches start every row
  // from BOS themselves, so it is dropped.
  const bool reads_prompt = info_.search_rule == "transformers";
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string where = "prompt " + std::to_string(i + 1);
    Ids& prompt = p.request.prefixes[i];
    prompt = narrow_ids(prompts[i], /*source=*/false, where);
    const bool bos = !prompt.empty() && prompt.front() == config().bos_id;
    if (bos && !reads_prompt) prompt.erase(prompt.begin());
    check_prefix(prompt, where, options, i < cut_prompts.size() && cut_prompts[i],
                 bos && reads_prompt);
  }
  p.truncated.resize(prompts.size());
  p.widths.resize(prompts.size());
  return p;
}

std::shared_ptr<runtime::Pending> Translator::Impl::submit(runtime::Request request,
                                                           bool refusable) const {
  return queue_->submit(std::move(request), refusable);
}

AsyncResults Translator::Impl::submit(PreparedRequest prepared, bool text, bool refusable) const {
  auto state = std::make_shared<AsyncResults::State>();
  state->impl = this;
  state->text = text;
  state->truncated = std::move(prepared.truncated);
  state->widths = std::move(prepared.widths);
  state->return_end_token = prepared.return_end_token;
  state->attention_framing = prepared.attention_framing;
  state->relay = std::move(prepared.relay);
  state->unk_id = prepared.unk_id;
  state->return_attention = prepared.return_attention;
  state->return_scores = prepared.return_scores;
  TFM_CHECK_ARG(!text || prepared.unk_id < 0)
      << "replace_unknowns replaces tokens by source tokens: translate token ids (their "
      << "results' unknown_sources say which source token replaces each unknown one) or, in "
      << "Python, token lists; the text methods have no tokens to put in";
  state->pending = submit(std::move(prepared.request), refusable);
  return AsyncResults(std::move(state));
}

void Translator::Impl::check_scores(const decode::NBest& nb, const std::string& where) {
  for (const decode::Hypothesis& h : nb)
    TFM_CHECK(std::isfinite(h.score) && std::isfinite(h.log_prob))
        << where << ": the model's score for this sentence is not finite (score " << h.score
        << ", log-probability " << h.log_prob << "): its outputs overflowed; the weights are "
        << "too large for its arithmetic or corrupt";
}

namespace {

// CTranslate2's replace_unknowns: per id, the source position of the row's highest attention
// (the first of equal ones) among the source's own tokens (columns first .. last) where the id is
// unk, -1 elsewhere. rows: row-major (ids, width).
std::vector<int64_t> unknown_sources(const Ids& ids, const std::vector<float>& rows, int64_t width,
                                     int64_t first, int64_t last, int64_t unk) {
  std::vector<int64_t> out(ids.size(), -1);
  for (size_t t = 0; t < ids.size() && last > first; ++t) {
    if (ids[t] != unk) continue;
    const float* row = rows.data() + static_cast<int64_t>(t) * width;
    out[t] = std::max_element(row + first, row + last) - (row + first);
  }
  return out;
}

}  // namespace

TranslationResult Translator::Impl::to_result(decode::NBest& nb, bool text, int64_t width,
                                              bool end_token, bool framing, int64_t unk_id,
                                              bool return_attention, bool scores) const {
  // The columns kept of each attention row: all, or the source's own tokens.
  const int64_t first = !framing && info_.source_bos ? 1 : 0;
  const int64_t last = width - (!framing && info_.source_eos ? 1 : 0);
  TranslationResult r;
  for (auto& h : nb) {
    TranslationHypothesis th;
    th.ids.assign(h.tokens.begin(), h.tokens.end());
    if (end_token && h.eos) th.ids.push_back(h.end_id >= 0 ? h.end_id : config().eos_id);
    if (text) th.text = decode_trg(h.tokens);
    th.score = scores ? h.score : std::numeric_limits<double>::quiet_NaN();
    th.log_prob = scores ? h.log_prob : std::numeric_limits<double>::quiet_NaN();
    if (unk_id >= 0) {
      // Over the source's own tokens, whatever attention_framing says.
      const int64_t own_first = info_.source_bos ? 1 : 0;
      const int64_t own_last = width - (info_.source_eos ? 1 : 0);
      th.unknown_sources =
          unknown_sources(h.tokens, h.attention, width, own_first, own_last, unk_id);
      if (end_token && h.eos) th.unknown_sources.push_back(-1);
      if (!return_attention) h.attention.clear();
    }
    const auto V = static_cast<size_t>(config().trg_vocab_size);
    for (size_t at = 0; at < h.logits.size(); at += V)
      th.logits.emplace_back(h.logits.begin() + static_cast<std::ptrdiff_t>(at),
                             h.logits.begin() + static_cast<std::ptrdiff_t>(at + V));
    for (size_t at = 0; at < h.attention.size(); at += static_cast<size_t>(width))
      th.attention.emplace_back(h.attention.begin() + static_cast<std::ptrdiff_t>(at) + first,
                                h.attention.begin() + static_cast<std::ptrdiff_t>(at) + last);
    r.hypotheses.push_back(std::move(th));
  }
  return r;
}

std::vector<std::vector<float>> Translator::Impl::score(std::vector<Ids> src, std::vector<Ids> trg,
                                                        int64_t max_input_length,
                                                        const std::stop_token& stop,
                                                        int64_t start_id) const {
  const ModelConfig& c = config();
  if (c.has_encoder())
    TFM_CHECK(src.size() == trg.size())
        << "score_batch: " << src.size() << " sources for " << trg.size() << " targets";
  else
    TFM_CHECK(src.empty()) << "score_batch: " << info_.directory
                           << " is a decoder-only model: give targets alone (no sources)";
  TranslationOptions cut;  // the one validator says what max_input_length may be
  cut.max_input_length = max_input_length;
  validate_translation_options(cut, info_);
  for (size_t i = 0; i < trg.size(); ++i) {
    for (int64_t id : trg[i])
      TFM_CHECK(id >= 0 && id < c.trg_vocab_size)
          << "score_batch: target " << i + 1 << ": token id " << id
          << " is outside the target vocabulary [0, " << c.trg_vocab_size << ")";
    // As CTranslate2 cuts "<s> target </s>" to max_input_length + 1 positions (0: no cut; the
    // validator made sure a cut leaves a token).
    const auto keep = static_cast<size_t>(max_input_length - 1);
    if (max_input_length != 0 && trg[i].size() > keep) trg[i].resize(keep);
    TFM_CHECK(static_cast<int64_t>(trg[i].size()) + 1 <= c.max_length)
        << "score_batch: target " << i + 1 << " has " << trg[i].size() << " tokens; the model has "
        << c.max_length << " positions (with BOS/EOS)";
    if (src.empty()) continue;
    const std::string where = "score_batch: source " + std::to_string(i + 1);
    if (max_input_length != 0) {
      prepare_source(src[i], where, max_input_length);
      continue;
    }
    Ids s = src[i];
    TFM_CHECK(!prepare_source(s, where))
        << where << " has " << src[i].size() << " tokens, more than the model's positions allow";
  }
  // Scoring runs on a worker so it gets the translator's intra_threads, as translation does.
  std::vector<std::vector<float>> out;
  BatchLimits limits{options_.max_batch_size, options_.max_batch_tokens};
  pool_->submit([&] { out = score_pairs_per_token(*model_, src, trg, limits, stop, start_id); })
      .get();
  for (size_t i = 0; i < out.size(); ++i)
    for (float x : out[i])
      TFM_CHECK(std::isfinite(x))
          << "score_batch: pair " << i + 1 << ": the model's score is not finite (" << x
          << "): its outputs overflowed; the weights are too large for its arithmetic or corrupt";
  return out;
}

namespace {

// seq cut to n tokens as CTranslate2 cuts its inputs: an end token that ended it (and a language
// code after one) stays at the end.
void cut_keeping_end(Ids& seq, size_t n, int64_t eos) {
  if (seq.back() == eos) {
    seq[n - 1] = seq.back();
  } else if (seq.size() >= 2 && seq[seq.size() - 2] == eos && n >= 2) {
    seq[n - 2] = seq[seq.size() - 2];
    seq[n - 1] = seq.back();
  }
  seq.resize(n);
}

}  // namespace

std::vector<SequenceScore> Translator::Impl::score_sequences(std::vector<Ids> seqs,
                                                             int64_t max_input_length,
                                                             const std::stop_token& stop) const {
  require_decoder_only();
  TranslationOptions cut;  // the one validator says what max_input_length may be
  cut.max_input_length = max_input_length;
  validate_translation_options(cut, info_);
  std::map<int32_t, std::vector<size_t>> by_start;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (max_input_length != 0 && std::ssize(seqs[i]) > max_input_length)
      cut_keeping_end(seqs[i], static_cast<size_t>(max_input_length), config().eos_id);
    TFM_CHECK(std::ssize(seqs[i]) <= config().max_length)
        << "score_sequences: sequence " << i + 1 << " has " << seqs[i].size()
        << " tokens; the model has " << config().max_length << " positions";
    if (seqs[i].size() > 1) by_start[seqs[i][0]].push_back(i);
  }
  std::vector<SequenceScore> out(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i)
    if (!seqs[i].empty()) out[i].tokens.assign(seqs[i].begin() + 1, seqs[i].end());
  for (const auto& [start, members] : by_start) {
    std::vector<Ids> rest;
    for (size_t i : members) rest.emplace_back(seqs[i].begin() + 1, seqs[i].end());
    // score() checks each rest and adds an end token, whose log-probability is not asked for.
    std::vector<std::vector<float>> lp = score({}, rest, 0, stop, start);
    for (size_t k = 0; k < members.size(); ++k) {
      lp[k].pop_back();
      out[members[k]].log_probs = std::move(lp[k]);
    }
  }
  return out;
}

}  // namespace tfm
