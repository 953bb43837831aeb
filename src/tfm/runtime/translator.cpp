// The public Translator and AsyncResults over Translator::Impl (translator_impl.h): text turned
// into ids and back, and every search, synchronous or not, through the Impl's request queue.
#include "tfm/translator.h"

#include "tfm/runtime/translator_impl.h"

namespace tfm {

namespace {

using IdLists = std::vector<std::vector<int64_t>>;

}  // namespace

// ------------------------------------------------------------------------------ AsyncResults

AsyncResults::AsyncResults() = default;
AsyncResults::AsyncResults(std::shared_ptr<State> state) : state_(std::move(state)) {}
AsyncResults::~AsyncResults() = default;
AsyncResults::AsyncResults(AsyncResults&&) noexcept = default;
AsyncResults& AsyncResults::operator=(AsyncResults&&) noexcept = default;

bool AsyncResults::ready() const {
  TFM_CHECK(state_) << "AsyncResults: no call (default-constructed, or moved from)";
  return state_->pending->ready();
}

bool AsyncResults::wait_until(std::chrono::steady_clock::time_point deadline) const {
  TFM_CHECK(state_) << "AsyncResults: no call (default-constructed, or moved from)";
  return state_->pending->wait_until(deadline);
}

std::vector<TranslationResult> AsyncResults::get() {
  TFM_CHECK(state_) << "AsyncResults: no call, or its results were taken already";
  const std::shared_ptr<State> s = std::move(state_);
  std::vector<decode::NBest> nbest = s->pending->take();
  std::vector<TranslationResult> out;
  out.reserve(nbest.size());
  for (size_t i = 0; i < nbest.size(); ++i) {
    Translator::Impl::check_scores(nbest[i], "sentence " + std::to_string(i + 1));
    out.push_back(s->impl->to_result(nbest[i], s->text, s->widths[i], s->return_end_token,
                                     s->attention_framing, s->unk_id, s->return_attention,
                                     s->return_scores));
    out.back().source_truncated = s->truncated[i];
  }
  return out;
}

void AsyncResults::cancel() {
  if (state_ && state_->relay) state_->relay->cancel();  // a search in progress stops too
  if (state_) state_->pending->cancel();
}

// -------------------------------------------------------------------------------- Translator

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
TranslationOptions Translator::default_options() const {
  return impl_->default_options();
}
bool Translator::has_vocabularies() const {
  return impl_->has_vocabs();
}
void Translator::require_vocabularies() const {
  impl_->require_vocabs();
}

AsyncResults Translator::translate_async(const IdLists& sources, const IdLists& target_prefix,
                                         const TranslationOptions& options,
                                         Batching batching) const {
  return impl_->submit(impl_->translation(sources, target_prefix, options, batching),
                       /*text=*/false, /*refusable=*/true);
}

AsyncResults Translator::translate_async(const std::vector<std::string>& sources,
                                         const std::vector<std::string>& target_prefix,
                                         const TranslationOptions& options,
                                         Batching batching) const {
  impl_->require_vocabs();
  const auto src = impl_->encode_texts(sources, true, options.source_lang);
  const auto prefix = impl_->encode_texts(target_prefix, false);
  return impl_->submit(
      impl_->translation(src.ids, prefix.ids, options, batching, src.cut, prefix.cut),
      /*text=*/true, /*refusable=*/true);
}

AsyncResults Translator::generate_async(const IdLists& prompts, const TranslationOptions& options,
                                        Batching batching) const {
  return impl_->submit(impl_->generation(prompts, options, batching), /*text=*/false,
                       /*refusable=*/true);
}

AsyncResults Translator::generate_async(const std::vector<std::string>& prompts,
                                        const TranslationOptions& options,
                                        Batching batching) const {
  impl_->require_vocabs();
  const auto ids = impl_->encode_texts(prompts, false);
  return impl_->submit(impl_->generation(ids.ids, options, batching, ids.cut), /*text=*/true,
                       /*refusable=*/true);
}

void Translator::flush() const {
  impl_->flush();
}

QueueStats Translator::queue_stats() const {
  return impl_->queue_stats();
}

// The synchronous calls: their own batches, never refused by a full queue.
std::vector<TranslationResult> Translator::translate_batch(
    const IdLists& sources, const IdLists& target_prefix, const TranslationOptions& options) const {
  return impl_
      ->submit(impl_->translation(sources, target_prefix, options, Batching::own),
               /*text=*/false, /*refusable=*/false)
      .get();
}

std::vector<TranslationResult> Translator::translate_batch(
    const std::vector<std::string>& sources, const std::vector<std::string>& target_prefix,
    const TranslationOptions& options) const {
  impl_->require_vocabs();
  const auto src = impl_->encode_texts(sources, true, options.source_lang);
  const auto prefix = impl_->encode_texts(target_prefix, false);
  return impl_
      ->submit(impl_->translation(src.ids, prefix.ids, options, Batching::own, src.cut, prefix.cut),
               /*text=*/true, /*refusable=*/false)
      .get();
}

std::vector<TranslationResult> Translator::translate_batch(
    const IdLists& sources, const TranslationOptions& options) const {
  return translate_batch(sources, IdLists{}, options);
}

std::vector<TranslationResult> Translator::translate_batch(
    const std::vector<std::string>& sources, const TranslationOptions& options) const {
  return translate_batch(sources, std::vector<std::string>{}, options);
}

std::vector<TranslationResult> Translator::generate_batch(const IdLists& prompts,
                                                          const TranslationOptions& options) const {
  return impl_
      ->submit(impl_->generation(prompts, options, Batching::own), /*text=*/false,
               /*refusable=*/false)
      .get();
}

std::vector<TranslationResult> Translator::generate_batch(const std::vector<std::string>& prompts,
                                                          const TranslationOptions& options) const {
  impl_->require_vocabs();
  const auto ids = impl_->encode_texts(prompts, false);
  return impl_
      ->submit(impl_->generation(ids.ids, options, Batching::own, ids.cut), /*text=*/true,
               /*refusable=*/false)
      .get();
}

namespace {

std::vector<double> totals(const std::vector<std::vector<float>>& per_token) {
  std::vector<double> out;
  out.reserve(per_token.size());
  for (const std::vector<float>& lp : per_token) {
    double s = 0;
    for (float x : lp) s += x;
    out.push_back(s);
  }
  return out;
}

// score_batch's ids, each checked against its side's vocabulary before it is narrowed.
std::vector<Ids> narrowed(const Translator::Impl& impl, const IdLists& lists, bool source) {
  std::vector<Ids> out(lists.size());
  for (size_t i = 0; i < lists.size(); ++i)
    out[i] = impl.narrow_ids(
        lists[i], source,
        std::string("score_batch: ") + (source ? "source " : "target ") + std::to_string(i + 1));
  return out;
}

}  // namespace

std::vector<double> Translator::score_batch(const IdLists& sources, const IdLists& targets) const {
  return totals(impl_->score(narrowed(*impl_, sources, true), narrowed(*impl_, targets, false)));
}

std::vector<double> Translator::score_batch(const std::vector<std::string>& sources,
                                            const std::vector<std::string>& targets) const {
  impl_->require_vocabs();
  std::vector<Ids> s, t;
  for (const auto& x : sources) s.push_back(impl_->encode_src(x));
  for (const auto& y : targets) t.push_back(impl_->encode_trg(y));
  return totals(impl_->score(std::move(s), std::move(t)));
}

std::vector<std::vector<float>> Translator::score_batch_per_token(const IdLists& sources,
                                                                  const IdLists& targets,
                                                                  int64_t max_input_length,
                                                                  std::stop_token stop) const {
  return impl_->score(narrowed(*impl_, sources, true), narrowed(*impl_, targets, false),
                      max_input_length, stop);
}

std::vector<SequenceScore> Translator::score_sequences(const IdLists& sequences,
                                                       int64_t max_input_length,
                                                       std::stop_token stop) const {
  return impl_->score_sequences(narrowed(*impl_, sequences, false), max_input_length, stop);
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
  TFM_CHECK_ARG(stream.target_prefix == nullptr)
      << "generate_stream: the input lines are the prompts; a target_prefix stream has no place";
  impl_->stream(in, out, options, stream, source_name, /*prompts=*/true);
}

}  // namespace tfm
