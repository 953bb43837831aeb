#include "tfm/translator.h"

#include <omp.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <istream>
#include <limits>
#include <mutex>
#include <ostream>

#include "tfm/autograd/grad_mode.h"
#include "tfm/core/profile.h"
#ifdef TFM_WITH_CUDA
#include "tfm/core/cuda/runtime.h"
#endif
#include "tfm/data/tokenizer_files.h"
#include "tfm/data/vocab.h"
#include "tfm/model/checkpoint.h"
#include "tfm/model/score.h"
#include "tfm/runtime/batch_search.h"
#include "tfm/runtime/model_info_impl.h"

namespace tfm {

namespace {

// Every TranslationOptions value checked before any work, in the API's own words.
decode::SearchOptions search_options(const TranslationOptions& t, const ModelConfig& c) {
  TFM_CHECK(t.beam_size >= 1) << "beam_size must be at least 1 (got " << t.beam_size << ")";
  // The target vocabulary less PAD and BOS, which are never generated.
  const int64_t tokens = std::max<int64_t>(1, c.trg_vocab_size - 2);
  TFM_CHECK(t.beam_size <= tokens)
      << "beam_size " << t.beam_size << " is larger than the model's target vocabulary (" << tokens
      << " tokens it can generate)";
  TFM_CHECK(t.num_hypotheses >= 1 && t.num_hypotheses <= t.beam_size)
      << "num_hypotheses must be between 1 and beam_size " << t.beam_size << " (got "
      << t.num_hypotheses << ")";
  TFM_CHECK(std::isfinite(t.length_penalty) && t.length_penalty >= 0 && t.length_penalty <= 10)
      << "length_penalty must be in [0, 10] (got " << t.length_penalty << ")";
  TFM_CHECK(std::isfinite(t.max_length_factor) && t.max_length_factor >= 0 &&
            t.max_length_factor <= 1000)
      << "max_length_factor must be in [0, 1000] (got " << t.max_length_factor << ")";
  TFM_CHECK(t.max_length_extra >= 0 && t.max_length_extra <= 1'000'000)
      << "max_length_extra must be in [0, 1000000] (got " << t.max_length_extra << ")";
  TFM_CHECK(t.max_decoding_length >= 1)
      << "max_decoding_length must be at least 1 (got " << t.max_decoding_length << ")";
  TFM_CHECK(t.min_decoding_length >= 0 && t.min_decoding_length <= c.max_length)
      << "min_decoding_length must be in [0, " << c.max_length << "] (got " << t.min_decoding_length
      << ")";
  TFM_CHECK(!t.sampling || t.beam_size == 1) << "sampling needs beam_size 1";
  TFM_CHECK(std::isfinite(t.sampling_temperature) && t.sampling_temperature >= 0)
      << "sampling_temperature must be a finite number >= 0 (got " << t.sampling_temperature << ")";
  TFM_CHECK(t.sampling_topk >= 0 && t.sampling_topk <= c.trg_vocab_size)
      << "sampling_topk must be in [0, " << c.trg_vocab_size << "] (got " << t.sampling_topk << ")";
  TFM_CHECK(std::isfinite(t.sampling_topp) && t.sampling_topp > 0 && t.sampling_topp <= 1)
      << "sampling_topp must be in (0, 1] (got " << t.sampling_topp << ")";
  decode::SearchOptions o;
  o.beam_size = t.beam_size;
  o.n_best = t.num_hypotheses;
  o.length_penalty = t.length_penalty;
  o.normalize = t.normalize_scores;
  o.max_length_a = t.max_length_factor;
  o.max_length_b = static_cast<double>(t.max_length_extra);
  o.max_length = t.max_decoding_length;
  o.min_length = t.min_decoding_length;
  o.sampling = t.sampling;
  o.temperature = t.sampling_temperature;
  o.top_k = t.sampling_topk;
  o.top_p = t.sampling_topp;
  o.seed = t.seed;
  o.return_attention = t.return_attention;
  return o;
}

std::string join_ids(const std::vector<int64_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(ids[i]);
  }
  return s;
}

// Fails unless o.device can run here: the CPU always, cuda with the backend built and a GPU.
void check_device(const TranslatorOptions& o) {
  if (o.device == Device::cpu) return;
#ifdef TFM_WITH_CUDA
  TFM_CHECK(o.device == Device::cuda && cuda::has_device())
      << "Translator: device " << device_name(o.device)
      << " is not available: " << cuda::no_device_reason();
#else
  TFM_FAIL() << "Translator: device " << device_name(o.device)
             << " is not available (this build has no CUDA backend: -DTFM_WITH_CUDA=ON)";
#endif
}

}  // namespace

class Translator::Impl {
 public:
  Impl(const std::string& dir, TranslatorOptions o) : options_(o) {
    profile::Scope scope(profile::Phase::load);
    check_device(o);
    TFM_CHECK(o.inter_threads >= 1)
        << "inter_threads must be at least 1 (got " << o.inter_threads << ")";
    TFM_CHECK(o.device == Device::cpu || o.inter_threads == 1)
        << "inter_threads must be 1 on " << device_name(o.device) << " (got " << o.inter_threads
        << "): batches run one at a time on the device's stream";
    TFM_CHECK(o.intra_threads >= 0)
        << "intra_threads must be at least 0 (0: all cores; got " << o.intra_threads << ")";
    TFM_CHECK(o.max_batch_size >= 1)
        << "max_batch_size must be at least 1 (got " << o.max_batch_size << ")";
    TFM_CHECK(o.max_batch_tokens >= 0)
        << "max_batch_tokens must be at least 0 (0: no limit; got " << o.max_batch_tokens << ")";
    const int cores = omp_get_num_procs();
    if (options_.intra_threads == 0)
      options_.intra_threads = std::max(1, cores / options_.inter_threads);
    options_.compute_type = resolve_compute_type(o.compute_type, o.device, /*training=*/false);
    // The workers first, and the model loaded and packed on one of them: the threads that pack
    // the weights are those that translate, and the calling thread starts no OpenMP team of its
    // own (under OMP_WAIT_POLICY=active an idle team spins on a core the workers need).
    pool_ = std::make_unique<runtime::WorkerPool>(options_.inter_threads, options_.intra_threads);
    int64_t parameter_count = 0;
    pool_
        ->submit([&] {
          model_ = load_model(dir);
          // Counted before binding: a bf16 or int8 binding releases the f32 weights it packed.
          parameter_count = model_->parameter_count();
          if (options_.device == Device::cpu)
            model_->bind_inference(options_.compute_type, std::nullopt, /*keep_f32=*/false);
          else
            model_->to(options_.device);  // f32 weights, the CUDA kernels' GEMMs
        })
        .get();
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
  }

  const ModelConfig& config() const { return model_->config(); }
  bool has_vocabs() const { return vocabs_.src != nullptr; }

  void require_vocabs() const {
    TFM_CHECK(vocab_error_.empty()) << vocab_error_;
    TFM_CHECK(has_vocabs()) << info_.directory << " has no SentencePiece vocabulary ("
                            << kSharedVocabFile << ", or " << kSrcVocabFile << " + "
                            << kTrgVocabFile << ") and no " << kTokenizerConfigFile
                            << ": translate token ids instead";
  }

  // A source as the model reads it: a converted model's tokenizer adds its framing (</s>, the
  // source language's token); an empty text stays empty (no hypotheses).
  Ids encode_src(const std::string& text) const {
    profile::Scope scope(profile::Phase::spm);
    const Ids pieces = vocabs_.src->encode(text);
    return pieces.empty() ? pieces : vocabs_.src->frame_source(pieces);
  }
  Ids encode_trg(const std::string& text) const {
    profile::Scope scope(profile::Phase::spm);
    return vocabs_.trg->encode(text);
  }
  std::string decode_trg(const Ids& ids) const {
    profile::Scope scope(profile::Phase::spm);
    return vocabs_.trg->decode(ids);
  }
  const ModelTokenizers& vocabs() const { return vocabs_; }

  // Source ids checked against the vocabulary and cut to the model's positions; true when cut.
  bool prepare_source(Ids& ids, const std::string& where) const {
    const ModelConfig& c = config();
    for (int64_t id : ids)
      TFM_CHECK(id >= 0 && id < c.src_vocab_size)
          << where << ": token id " << id << " is outside the source vocabulary [0, "
          << c.src_vocab_size << ")";
    const auto limit = static_cast<size_t>(c.max_length - c.seq_format().source_specials());
    if (ids.size() <= limit) return false;
    // A converted model's framing ends the source (</s>, a language token): cut before it.
    const size_t keep = vocabs_.src ? std::min(vocabs_.src->framing().suffix.size(), limit) : 0;
    std::copy(ids.end() - static_cast<std::ptrdiff_t>(keep), ids.end(),
              ids.begin() + static_cast<std::ptrdiff_t>(limit - keep));
    ids.resize(limit);
    return true;
  }

  // The search over sources (already prepared), results in input order. on_batch and
  // sort_group as in search_in_batches (BatchLimits).
  std::vector<decode::NBest> search(const std::vector<Ids>& sources,
                                    const std::vector<uint64_t>& ids,
                                    const std::vector<Ids>& prefixes,
                                    const decode::SearchOptions& so,
                                    const runtime::BatchDone& on_batch = {},
                                    int64_t sort_group = 0) const {
    decode::SearchOptions o = so;
    // A device runs one search at a time on its stream: no shards on host threads.
    if (options_.device != Device::cpu) o.shard_size = 0;
    auto s = decode::make_search(o);
    BatchLimits limits{options_.max_batch_size, options_.max_batch_tokens, sort_group};
    return runtime::search_in_batches(*model_, *s, sources, ids, prefixes, limits, pool_.get(),
                                      on_batch);
  }

  // Target prefixes (ids) checked in the API's words and converted: one per source (or none at
  // all), target ids other than PAD/BOS/EOS, and room for EOS after each.
  std::vector<Ids> prepare_prefixes(const std::vector<std::vector<int64_t>>& prefixes,
                                    size_t sources, const TranslationOptions& o) const {
    TFM_CHECK(prefixes.empty() || prefixes.size() == sources)
        << "target_prefix has " << prefixes.size() << " entries for " << sources
        << " sources (one per source, empty for none)";
    std::vector<Ids> out(prefixes.size());
    for (size_t i = 0; i < prefixes.size(); ++i) {
      out[i].assign(prefixes[i].begin(), prefixes[i].end());
      check_prefix(out[i], "target_prefix " + std::to_string(i + 1), o);
    }
    return out;
  }

  // A prefix's ids are target ids other than PAD/BOS/EOS and leave room for EOS; errors start
  // with `where`.
  void check_prefix(const Ids& prefix, const std::string& where,
                    const TranslationOptions& o) const {
    const ModelConfig& c = config();
    const bool by_option = o.max_decoding_length < c.max_length;
    const int64_t room = std::min(o.max_decoding_length, c.max_length) - 1;
    for (int64_t id : prefix) {
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
    TFM_CHECK(static_cast<int64_t>(prefix.size()) <= room)
        << where << " has " << prefix.size() << " tokens; "
        << (by_option ? "max_decoding_length " + std::to_string(o.max_decoding_length)
                      : "the model's " + std::to_string(c.max_length) + " positions")
        << (by_option ? " leaves" : " leave") << " room for " << room << " before EOS";
  }

  void stream(std::istream& in, std::ostream& out, const TranslationOptions& options,
              const StreamOptions& stream, const std::string& source_name, bool prompts) const;

  void require_decoder_only() const {
    TFM_CHECK(!config().has_encoder())
        << info_.directory << " is an encoder-decoder model: it translates (translate_batch); "
        << "generate_batch continues prompts with a decoder-only model";
  }

  void require_encoder() const {
    TFM_CHECK(config().has_encoder())
        << info_.directory << " is a decoder-only model: it continues prompts (generate_batch) "
        << "and scores targets, it does not translate (an encoder-decoder model does)";
  }

  // generate_batch's checks, before any work: the prompts as the search takes them.
  std::vector<Ids> checked_prompts(const std::vector<std::vector<int64_t>>& prompts,
                                   const TranslationOptions& options) const {
    require_decoder_only();
    TFM_CHECK(!options.return_attention)
        << "return_attention: a decoder-only model has no cross-attention to return";
    static_cast<void>(search_options(options, config()));  // checks every option
    std::vector<Ids> pre(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      pre[i].assign(prompts[i].begin(), prompts[i].end());
      check_prefix(pre[i], "prompt " + std::to_string(i + 1), options);
    }
    return pre;
  }

  std::vector<TranslationResult> generate(const std::vector<std::vector<int64_t>>& prompts,
                                          const TranslationOptions& options, bool text) const {
    const std::vector<Ids> pre = checked_prompts(prompts, options);
    const auto so = search_options(options, config());
    auto nbest = search(std::vector<Ids>(prompts.size()), {}, pre, so);
    std::vector<TranslationResult> out;
    out.reserve(nbest.size());
    for (auto& nb : nbest) out.push_back(to_result(nb, text, 0));
    return out;
  }

  std::vector<TranslationResult> translate(std::vector<Ids> src,
                                           const std::vector<std::vector<int64_t>>& prefixes,
                                           const TranslationOptions& options, bool text) const {
    require_encoder();
    const auto so = search_options(options, config());
    const std::vector<Ids> pre = prepare_prefixes(prefixes, src.size(), options);
    std::vector<char> truncated(src.size());
    for (size_t i = 0; i < src.size(); ++i)
      truncated[i] = prepare_source(src[i], "source " + std::to_string(i + 1));
    auto nbest = search(src, {}, pre, so);
    std::vector<TranslationResult> out;
    out.reserve(nbest.size());
    for (size_t i = 0; i < nbest.size(); ++i) {
      const int64_t width =
          static_cast<int64_t>(src[i].size()) + config().seq_format().source_specials();
      out.push_back(to_result(nbest[i], text, width));
      out.back().source_truncated = truncated[i];
    }
    return out;
  }

  // width: the attention rows' (the framed source's positions).
  TranslationResult to_result(decode::NBest& nb, bool text, int64_t width) const {
    TranslationResult r;
    for (auto& h : nb) {
      TranslationHypothesis th;
      th.ids.assign(h.tokens.begin(), h.tokens.end());
      if (text) th.text = decode_trg(h.tokens);
      th.score = h.score;
      th.log_prob = h.log_prob;
      for (size_t at = 0; at < h.attention.size(); at += static_cast<size_t>(width))
        th.attention.emplace_back(h.attention.begin() + static_cast<std::ptrdiff_t>(at),
                                  h.attention.begin() + static_cast<std::ptrdiff_t>(at) + width);
      r.hypotheses.push_back(std::move(th));
    }
    return r;
  }

  std::vector<double> score(const std::vector<Ids>& src, const std::vector<Ids>& trg) const {
    const ModelConfig& c = config();
    if (c.has_encoder())
      TFM_CHECK(src.size() == trg.size())
          << "score_batch: " << src.size() << " sources for " << trg.size() << " targets";
    else
      TFM_CHECK(src.empty()) << "score_batch: " << info_.directory
                             << " is a decoder-only model: give targets alone (no sources)";
    for (size_t i = 0; i < trg.size(); ++i) {
      for (int64_t id : trg[i])
        TFM_CHECK(id >= 0 && id < c.trg_vocab_size)
            << "score_batch: target " << i + 1 << ": token id " << id
            << " is outside the target vocabulary [0, " << c.trg_vocab_size << ")";
      TFM_CHECK(static_cast<int64_t>(trg[i].size()) + 1 <= c.max_length)
          << "score_batch: target " << i + 1 << " has " << trg[i].size()
          << " tokens; the model has " << c.max_length << " positions (with BOS/EOS)";
      if (src.empty()) continue;
      Ids s = src[i];
      TFM_CHECK(!prepare_source(s, "score_batch: source " + std::to_string(i + 1)))
          << "score_batch: source " << i + 1 << " has " << src[i].size()
          << " tokens, more than the model's positions allow";
    }
    // Scoring runs on a worker so it gets the translator's intra_threads, as translation does.
    std::vector<double> out;
    BatchLimits limits{options_.max_batch_size, options_.max_batch_tokens};
    pool_->submit([&] { out = score_pairs(*model_, src, trg, limits); }).get();
    return out;
  }

  const ModelInfo& info() const { return info_; }
  const TranslatorOptions& options() const { return options_; }

 private:
  TranslatorOptions options_;
  std::unique_ptr<Transformer> model_;
  ModelTokenizers vocabs_;
  std::string vocab_error_;  // why the directory's vocabularies cannot be used, if they cannot
  ModelInfo info_;
  std::unique_ptr<runtime::WorkerPool> pool_;
};

Translator::Translator(const std::string& model_dir, const TranslatorOptions& options)
    : impl_(std::make_unique<Impl>(model_dir, options)) {}
Translator::~Translator() = default;
Translator::Translator(Translator&&) noexcept = default;
Translator& Translator::operator=(Translator&&) noexcept = default;

const ModelInfo& Translator::model_info() const {
  return impl_->info();
}
const TranslatorOptions& Translator::options() const {
  return impl_->options();
}
bool Translator::has_vocabularies() const {
  return impl_->has_vocabs();
}
void Translator::require_vocabularies() const {
  impl_->require_vocabs();
}

std::vector<TranslationResult> Translator::translate_batch(
    const std::vector<std::vector<int64_t>>& sources, const TranslationOptions& options) const {
  return translate_batch(sources, std::vector<std::vector<int64_t>>{}, options);
}

std::vector<TranslationResult> Translator::generate_batch(
    const std::vector<std::vector<int64_t>>& prompts, const TranslationOptions& options) const {
  return impl_->generate(prompts, options, /*text=*/false);
}

void Translator::check_generate_batch(const std::vector<std::vector<int64_t>>& prompts,
                                      const TranslationOptions& options) const {
  impl_->checked_prompts(prompts, options);
}

std::vector<TranslationResult> Translator::generate_batch(const std::vector<std::string>& prompts,
                                                          const TranslationOptions& options) const {
  impl_->require_vocabs();
  std::vector<std::vector<int64_t>> ids(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Ids p = impl_->encode_trg(prompts[i]);
    ids[i].assign(p.begin(), p.end());
  }
  return impl_->generate(ids, options, /*text=*/true);
}

std::vector<TranslationResult> Translator::translate_batch(
    const std::vector<std::string>& sources, const TranslationOptions& options) const {
  return translate_batch(sources, std::vector<std::string>{}, options);
}

std::vector<TranslationResult> Translator::translate_batch(
    const std::vector<std::vector<int64_t>>& sources,
    const std::vector<std::vector<int64_t>>& target_prefix,
    const TranslationOptions& options) const {
  std::vector<Ids> src(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) src[i].assign(sources[i].begin(), sources[i].end());
  return impl_->translate(std::move(src), target_prefix, options, /*text=*/false);
}

std::vector<TranslationResult> Translator::translate_batch(
    const std::vector<std::string>& sources, const std::vector<std::string>& target_prefix,
    const TranslationOptions& options) const {
  impl_->require_vocabs();
  std::vector<Ids> src(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) src[i] = impl_->encode_src(sources[i]);
  std::vector<std::vector<int64_t>> prefix(target_prefix.size());
  for (size_t i = 0; i < target_prefix.size(); ++i) {
    const Ids ids = impl_->encode_trg(target_prefix[i]);
    prefix[i].assign(ids.begin(), ids.end());
  }
  return impl_->translate(std::move(src), prefix, options, /*text=*/true);
}

std::vector<double> Translator::score_batch(
    const std::vector<std::vector<int64_t>>& sources,
    const std::vector<std::vector<int64_t>>& targets) const {
  std::vector<Ids> s(sources.size()), t(targets.size());
  for (size_t i = 0; i < sources.size(); ++i) s[i].assign(sources[i].begin(), sources[i].end());
  for (size_t i = 0; i < targets.size(); ++i) t[i].assign(targets[i].begin(), targets[i].end());
  return impl_->score(s, t);
}

std::vector<double> Translator::score_batch(const std::vector<std::string>& sources,
                                            const std::vector<std::string>& targets) const {
  impl_->require_vocabs();
  std::vector<Ids> s, t;
  for (const auto& x : sources) s.push_back(impl_->encode_src(x));
  for (const auto& y : targets) t.push_back(impl_->encode_trg(y));
  return impl_->score(s, t);
}

std::vector<int64_t> Translator::tokenize_source(const std::string& text) const {
  impl_->require_vocabs();
  const Ids ids = impl_->encode_src(text);
  return {ids.begin(), ids.end()};
}

std::vector<int64_t> Translator::tokenize_target(const std::string& text) const {
  impl_->require_vocabs();
  const Ids ids = impl_->encode_trg(text);
  return {ids.begin(), ids.end()};
}

std::vector<std::string> Translator::source_tokens(const std::string& text) const {
  impl_->require_vocabs();
  const Tokenizer& t = *impl_->vocabs().src;
  std::vector<std::string> pieces = t.encode_pieces(text);
  if (pieces.empty() || t.framing().size() == 0) return pieces;
  // A converted model's framing as tokens too ("eng_Latn", "</s>"), so that
  // source_tokens_to_ids gives tokenize_source's ids.
  const Ids framed = impl_->encode_src(text);
  const auto prefix = static_cast<std::ptrdiff_t>(t.framing().prefix.size());
  const auto suffix = static_cast<std::ptrdiff_t>(t.framing().suffix.size());
  std::vector<std::string> out = t.ids_to_pieces(Ids(framed.begin(), framed.begin() + prefix));
  out.insert(out.end(), pieces.begin(), pieces.end());
  for (std::string& s : t.ids_to_pieces(Ids(framed.end() - suffix, framed.end())))
    out.push_back(std::move(s));
  return out;
}

std::vector<int64_t> Translator::source_tokens_to_ids(
    const std::vector<std::string>& tokens) const {
  impl_->require_vocabs();
  const Ids ids = impl_->vocabs().src->pieces_to_ids(tokens);
  return {ids.begin(), ids.end()};
}

std::vector<int64_t> Translator::target_tokens_to_ids(
    const std::vector<std::string>& tokens) const {
  impl_->require_vocabs();
  const Ids ids = impl_->vocabs().trg->pieces_to_ids(tokens);
  return {ids.begin(), ids.end()};
}

std::vector<std::string> Translator::target_ids_to_tokens(const std::vector<int64_t>& ids) const {
  impl_->require_vocabs();
  const int64_t n = impl_->vocabs().trg->size();
  for (const int64_t id : ids)
    TFM_CHECK(id >= 0 && id < n) << "target id " << id << " is outside the vocabulary [0, " << n
                                 << ")";
  return impl_->vocabs().trg->ids_to_pieces(Ids(ids.begin(), ids.end()));
}

void Translator::translate_stream(std::istream& in, std::ostream& out,
                                  const TranslationOptions& options, const StreamOptions& stream,
                                  const std::string& source_name) const {
  impl_->require_encoder();
  impl_->stream(in, out, options, stream, source_name, /*prompts=*/false);
}

void Translator::generate_stream(std::istream& in, std::ostream& out,
                                 const TranslationOptions& options, const StreamOptions& stream,
                                 const std::string& source_name) const {
  impl_->require_decoder_only();
  TFM_CHECK(stream.target_prefix == nullptr)
      << "generate_stream: the input lines are the prompts; a target_prefix stream has no place";
  TFM_CHECK(!options.return_attention)
      << "return_attention: a decoder-only model has no cross-attention to return";
  impl_->stream(in, out, options, stream, source_name, /*prompts=*/true);
}

// Lines in, lines out, for both streams: each input line is a source (translate_stream) or a
// prompt, forced as a target prefix is (generate_stream, whose sources are all empty).
void Translator::Impl::stream(std::istream& in, std::ostream& out,
                              const TranslationOptions& options, const StreamOptions& stream,
                              const std::string& source_name, bool prompts) const {
  if (!stream.ids) require_vocabs();
  TFM_CHECK(stream.read_ahead >= 1)
      << "read_ahead must be at least 1 line (got " << stream.read_ahead << ")";
  auto so = search_options(options, config());
  so.return_attention = false;  // lines of text have no place for it
  const ModelConfig& c = config();
  uint64_t base = 0;  // index of the window's first line in the whole input
  std::vector<std::string> lines;
  // Up to this many windows of read_ahead lines are decoded at once: each is sorted and batched
  // on its own, as if decoded alone (the same batches, so the same results), but their shards
  // form one pool of work, so the threads wait for the slowest shard once per kWindows windows
  // instead of once per window.
  constexpr int64_t kWindows = 8;
  for (;;) {
    // Windows: block for one line, then take only lines already readable (in_avail counts the
    // buffered bytes and, for files and pipes, what the kernel holds), so an interactive
    // caller gets its answer without sending more.
    lines.clear();
    profile::Scope reading(profile::Phase::io);
    const int64_t most = stream.read_ahead > std::numeric_limits<int64_t>::max() / kWindows
                             ? std::numeric_limits<int64_t>::max()
                             : kWindows * stream.read_ahead;
    for (std::string line; static_cast<int64_t>(lines.size()) < most;) {
      if (!lines.empty() && in.rdbuf()->in_avail() <= 0) break;
      if (!std::getline(in, line)) break;
      lines.push_back(std::move(line));
    }
    // The prefixes of these lines, one line each; at the end of the input, none may be left.
    std::vector<std::string> prefix_lines;
    if (stream.target_prefix) {
      std::istream& pin = *stream.target_prefix;
      for (size_t i = 0; i < lines.size(); ++i) {
        std::string line;
        TFM_CHECK(std::getline(pin, line))
            << stream.target_prefix_name << " ends at line " << base + i << ", "
            << (pin.bad() ? "unreadable" : "short of") << " the input's line " << base + i + 1
            << " (" << source_name << "): one target prefix a line, an empty line for none";
        prefix_lines.push_back(std::move(line));
      }
      if (lines.empty()) {
        std::string line;
        TFM_CHECK(!std::getline(pin, line))
            << stream.target_prefix_name << " has more lines than the input (" << source_name
            << ", " << base << " lines): one target prefix a line";
        TFM_CHECK(!pin.bad()) << "error reading " << stream.target_prefix_name;
      }
    }
    reading.end();
    TFM_CHECK(!in.bad()) << "error reading " << source_name;
    if (lines.empty()) break;
    std::vector<Ids> src(lines.size()), prefixes(prompts ? lines.size() : prefix_lines.size());
    std::vector<uint64_t> ids(lines.size());
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string where = source_name + ":" + std::to_string(base + i + 1);
      ids[i] = base + i;
      if (prompts) {  // an empty prompt starts from BOS alone
        prefixes[i] =
            stream.ids ? parse_ids(lines[i], c.trg_vocab_size, where) : encode_trg(lines[i]);
        check_prefix(prefixes[i], where, options);
        continue;
      }
      src[i] = stream.ids ? parse_ids(lines[i], c.src_vocab_size, where) : encode_src(lines[i]);
      const size_t n = src[i].size();
      if (prepare_source(src[i], where) && stream.warnings)
        *stream.warnings << "tfm: warning: " << where << ": " << n
                         << " tokens, more than the model's " << src[i].size() << "; truncated\n";
      if (prefixes.empty()) continue;
      const std::string pwhere = stream.target_prefix_name + ":" + std::to_string(base + i + 1);
      prefixes[i] = stream.ids ? parse_ids(prefix_lines[i], c.trg_vocab_size, pwhere)
                               : encode_trg(prefix_lines[i]);
      check_prefix(prefixes[i], pwhere, options);
    }
    // Lines are written in input order as soon as they and every earlier one are done; batches
    // finish on the workers, so the bookkeeping and the writing happen under one lock.
    std::mutex mu;
    std::vector<decode::NBest> results(src.size());
    std::vector<char> ready(src.size(), 0);
    for (size_t i = 0; i < src.size(); ++i) ready[i] = !prompts && src[i].empty();
    size_t next = 0;
    auto text = [&](const Ids& t) {
      return stream.ids ? join_ids(std::vector<int64_t>(t.begin(), t.end())) : decode_trg(t);
    };
    auto flush_ready = [&] {
      profile::Scope writing(profile::Phase::io);
      for (; next < src.size() && ready[next]; ++next) {
        const decode::NBest& nb = results[next];
        profile::add_sentences(1);
        if (!nb.empty()) profile::add_generated_tokens(static_cast<int64_t>(nb[0].tokens.size()));
        if (stream.n_best) {  // an empty input prints nothing here: there is no hypothesis
          for (const auto& h : nb) {
            char score[32];
            std::snprintf(score, sizeof score, "%.6f", h.score);
            out << base + next << " ||| " << text(h.tokens) << " ||| " << score << '\n';
          }
        } else {
          out << (nb.empty() ? std::string() : text(nb[0].tokens)) << '\n';
        }
        results[next].clear();
      }
      errno = 0;
      out.flush();
      TFM_CHECK(out.good()) << "error writing the translations of " << source_name << ": "
                            << (errno ? std::strerror(errno) : "stream failed");
    };
    flush_ready();
    search(
        src, ids, prefixes, so,
        [&](const std::vector<size_t>& where, std::vector<decode::NBest>& r) {
          std::lock_guard<std::mutex> lock(mu);
          for (size_t k = 0; k < where.size(); ++k) {
            results[where[k]] = std::move(r[k]);
            ready[where[k]] = 1;
          }
          flush_ready();
        },
        stream.read_ahead);
    base += lines.size();
  }
}

}  // namespace tfm
