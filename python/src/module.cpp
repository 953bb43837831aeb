// tfm._tfm: the pybind11 layer over the public C++ API (include/tfm/*.h). It converts arguments
// and results and releases the GIL around every call into the library; the search, batching,
// tokenisation and option checks stay in libtfm. The public Python API (argument types, text vs
// ids, translate_iterable) is python/tfm/translator.py, which calls the functions here.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <tfm/convert.h>
#include <tfm/error.h>
#include <tfm/model_info.h>
#include <tfm/output_path.h>
#include <tfm/translator.h>
#include <tfm/types.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <sstream>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "bindings.h"

namespace py = pybind11;

namespace {

// How the validator's messages name the options: the keyword arguments are the field names,
// and the search is CTranslate2's choice (translator.py: sampling when sampling_topk != 1).
std::string python_name(std::string_view field) {
  if (field == "search=sampling") return "sampling (sampling_topk other than 1)";
  if (field == "search=beam") return "a beam_size above 1";
  if (field == "step_callback") return "callback";
  return tfm::field_name(field);
}

// A Python callable as a library step callback (TranslationOptions::step_callback): called from
// the library's decoding threads with the GIL taken; its exception (a py::error_already_set)
// ends the call's search and reaches the caller through the call's results, where pybind11
// raises it again. Released under the GIL wherever the last copy of the options goes (a worker
// thread, once the call is done).
class PyStepCallback {
 public:
  explicit PyStepCallback(py::object fn) : fn_(std::move(fn)) {}
  ~PyStepCallback() {
    if (!Py_IsInitialized()) return;  // the interpreter is gone: nothing to release
    py::gil_scoped_acquire gil;
    fn_ = py::object();
  }
  PyStepCallback(const PyStepCallback&) = delete;
  PyStepCallback& operator=(const PyStepCallback&) = delete;

  bool operator()(const tfm::StepResult& step) const {
    py::gil_scoped_acquire gil;
    // A copy: the callable may keep it (generate_tokens queues it).
    const py::object out = fn_(py::cast(step, py::return_value_policy::copy));
    const int truth = PyObject_IsTrue(out.ptr());
    if (truth < 0) throw py::error_already_set();
    return truth == 1;
  }

 private:
  py::object fn_;
};

// One result as Python sees it: text hypotheses for text input, id lists for id input; scores,
// log-probabilities and attention only when asked for (CTranslate2 leaves them empty otherwise).
struct PyTranslationResult {
  py::list hypotheses;
  py::list scores;
  py::list log_probs;
  py::list attention;
  // CTranslate2's return_logits_vocab: per hypothesis, one array.array('f') per decoder step.
  py::list logits;
  bool source_truncated = false;
};

// One decoder step's logits as Python's array.array('f'): a float32 buffer that numpy reads
// without a copy (np.asarray), as it reads CTranslate2's StorageView, with no numpy dependency.
py::object float_array(const std::vector<float>& row) {
  static_assert(sizeof(float) == 4);
  // Not a static py::object: it would outlive the interpreter (sys.modules caches the import).
  const py::object array = py::module_::import("array").attr("array");
  return array("f", py::bytes(reinterpret_cast<const char*>(row.data()), row.size() * 4));
}

std::vector<PyTranslationResult> to_python(std::vector<tfm::TranslationResult>&& results, bool text,
                                           bool return_scores, bool return_attention,
                                           bool return_logits = false) {
  std::vector<PyTranslationResult> out(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    PyTranslationResult& r = out[i];
    r.source_truncated = results[i].source_truncated;
    for (tfm::TranslationHypothesis& h : results[i].hypotheses) {
      if (text)
        r.hypotheses.append(py::str(h.text));
      else
        r.hypotheses.append(py::cast(h.ids));
      if (return_scores) {
        r.scores.append(h.score);
        r.log_probs.append(h.log_prob);
      }
      if (return_attention) r.attention.append(py::cast(h.attention));
      if (return_logits) {
        py::list steps;
        for (const std::vector<float>& row : h.logits) steps.append(float_array(row));
        r.logits.append(steps);
      }
    }
  }
  return out;
}

[[noreturn]] void raise_os_error(int err, const std::string& path) {
  errno = err;
  PyErr_SetFromErrnoWithFilename(PyExc_OSError, path.c_str());
  throw py::error_already_set();
}

// How every long call waits (translate_batch's results, scoring, the file methods): with the GIL
// released, in 50 ms slices, running Python's signal handlers between them. When a handler
// raises (Ctrl-C's KeyboardInterrupt), give_up() cancels the call's remaining work (the GIL
// released: it may wait for a batch in progress) and the exception propagates at once, instead
// of after the whole call. ready(deadline): whether the call is done, waiting until deadline.
template <typename Ready, typename GiveUp>
void tfm_wait_interruptibly(Ready ready, GiveUp give_up) {
  for (;;) {
    bool done = false;
    {
      py::gil_scoped_release release;
      done = ready(std::chrono::steady_clock::now() + std::chrono::milliseconds(50));
    }
    if (done) return;
    if (PyErr_CheckSignals() != 0) {
      {
        py::gil_scoped_release release;
        give_up();
      }
      throw py::error_already_set();
    }
  }
}

// A synchronous library call, work(stop_token), run on a thread of its own and waited for as
// above: Ctrl-C requests `stop`, which the library honours before its next batch (score
// batches, stream windows), and returns once the call has ended. Its result, or its error.
// `stop` may also be requested from elsewhere (tfm.Translator's asynchronous scoring, whose
// caller waits in Python and gives up there).
template <typename Work>
auto run_interruptibly(Work work, std::stop_source stop = {}) {
  auto call = std::async(std::launch::async, [&] { return work(stop.get_token()); });
  tfm_wait_interruptibly(
      [&](std::chrono::steady_clock::time_point deadline) {
        return call.wait_until(deadline) == std::future_status::ready;
      },
      [&] {
        stop.request_stop();
        call.wait();
      });
  return call.get();
}

// What a call's hypotheses are for Python: text, id lists, or SentencePiece token lists.
enum class Kind { text, ids, tokens };

// One asynchronous call's results for Python (translate_iterable keeps a window of them in
// flight; the synchronous methods wait at once): result() waits with the GIL released, converts
// once, and returns the same list on every later call.
class PyAsync {
 public:
  // sources: a token call's source tokens, for replace_unknowns (empty otherwise).
  PyAsync(tfm::AsyncResults results, const tfm::Translator& translator, Kind kind,
          bool return_scores, const tfm::TranslationOptions& options,
          std::vector<std::vector<std::string>> sources = {})
      : results_(std::move(results)),
        translator_(translator),
        kind_(kind),
        return_scores_(return_scores),
        return_attention_(options.return_attention),
        return_logits_(options.return_logits_vocab),
        replace_unknowns_(options.replace_unknowns),
        sources_(std::move(sources)) {}

  bool done() const { return converted_.has_value() || results_.ready(); }
  void cancel() { results_.cancel(); }

  std::vector<PyTranslationResult> result() {
    if (converted_) return *converted_;
    wait_interruptibly();
    std::vector<tfm::TranslationResult> results;
    std::vector<std::vector<std::vector<std::string>>> tokens;
    {
      py::gil_scoped_release release;
      results = results_.get();
      if (kind_ == Kind::tokens) {
        tokens.resize(results.size());
        for (size_t i = 0; i < results.size(); ++i)
          for (const tfm::TranslationHypothesis& h : results[i].hypotheses)
            tokens[i].push_back(replaced(translator_.target_ids_to_tokens(h.ids), h, i));
      }
    }
    converted_ = to_python(std::move(results), kind_ == Kind::text, return_scores_,
                           return_attention_, return_logits_);
    for (size_t i = 0; i < tokens.size(); ++i) {
      py::list hyps;
      for (auto& t : tokens[i]) hyps.append(py::cast(t));
      (*converted_)[i].hypotheses = hyps;
    }
    return *converted_;
  }

 private:
  // Ctrl-C cancels the call: the sources not yet in a batch leave the queue.
  void wait_interruptibly() {
    tfm_wait_interruptibly(
        [this](std::chrono::steady_clock::time_point deadline) {
          return results_.wait_until(deadline);
        },
        [this] { results_.cancel(); });
  }

  // CTranslate2's replace_unknowns on a token call: each unknown token becomes the source token
  // the library found it attends most (TranslationHypothesis::unknown_sources).
  std::vector<std::string> replaced(std::vector<std::string> tokens,
                                    const tfm::TranslationHypothesis& h, size_t i) const {
    if (!replace_unknowns_) return tokens;
    for (size_t t = 0; t < tokens.size() && t < h.unknown_sources.size(); ++t) {
      const int64_t pos = h.unknown_sources[t];
      if (pos >= 0 && static_cast<size_t>(pos) < sources_[i].size())
        tokens[t] = sources_[i][static_cast<size_t>(pos)];
    }
    return tokens;
  }

  tfm::AsyncResults results_;
  const tfm::Translator& translator_;
  Kind kind_;
  bool return_scores_, return_attention_, return_logits_, replace_unknowns_;
  std::vector<std::vector<std::string>> sources_;
  std::optional<std::vector<PyTranslationResult>> converted_;
};

// The Translator with the GIL released around every call: several Python threads using one
// object run at once, as the C++ Translator allows. Every translation goes through the
// library's asynchronous interface (translate_async / generate_async, own batches: the results
// of translate_batch); the synchronous methods wait for theirs at once.
class PyTranslator {
 public:
  PyTranslator(const std::string& model_dir, const std::string& device,
               const std::string& compute_type, int intra_threads, int inter_threads,
               int64_t max_batch_size, int64_t max_batch_tokens) {
    tfm::TranslatorOptions o;
    o.device = tfm::parse_device(device);
    // "default" (CTranslate2's: the type the model was converted in): a converted model's
    // --quantization when it has one (auto picks it), else the library's default.
    const bool as_saved = compute_type.empty() || compute_type == "default";
    if (as_saved && !tfm::read_model_info(model_dir).compute_type.empty())
      o.compute_type = tfm::ComputeType::automatic;
    else if (!compute_type.empty())
      o.compute_type = tfm::parse_compute_type(compute_type);
    o.intra_threads = intra_threads;
    o.inter_threads = inter_threads;
    o.max_batch_size = max_batch_size;
    o.max_batch_tokens = max_batch_tokens;
    tfm::validate_translator_options(o, python_name);
    py::gil_scoped_release release;
    translator_ = std::make_unique<tfm::Translator>(model_dir, o);
  }

  // The GIL released while the library stops its queue: a call still decoding may call its
  // Python step callback (which takes the GIL) before it ends.
  ~PyTranslator() {
    if (!translator_ || !Py_IsInitialized() || !PyGILState_Check()) return;
    py::gil_scoped_release release;
    translator_.reset();
  }
  PyTranslator(const PyTranslator&) = delete;
  PyTranslator& operator=(const PyTranslator&) = delete;

  // target_prefix: one per source, or empty for none (the library checks the count).
  PyAsync submit_text(const std::vector<std::string>& sources,
                      const std::vector<std::string>& target_prefix,
                      tfm::TranslationOptions options, bool return_scores) const {
    options.return_scores = return_scores;  // what the results carry (greedy skips them)
    check(options);
    return wrap(Kind::text, return_scores, options,
                [&] { return translator_->translate_async(sources, target_prefix, options); });
  }

  PyAsync submit_ids(const std::vector<std::vector<int64_t>>& sources,
                     const std::vector<std::vector<int64_t>>& target_prefix,
                     tfm::TranslationOptions options, bool return_scores) const {
    options.return_scores = return_scores;  // what the results carry (greedy skips them)
    check(options);
    return wrap(Kind::ids, return_scores, options,
                [&] { return translator_->translate_async(sources, target_prefix, options); });
  }

  // CTranslate2's token lists: SentencePiece pieces in, pieces out (the prefix too).
  PyAsync submit_tokens(const std::vector<std::vector<std::string>>& sources,
                        const std::vector<std::vector<std::string>>& target_prefix,
                        tfm::TranslationOptions options, bool return_scores) const {
    options.return_scores = return_scores;  // what the results carry (greedy skips them)
    check(options);
    return wrap(
        Kind::tokens, return_scores, options,
        [&] {
          return translator_->translate_async(to_ids(sources, /*source=*/true),
                                              to_ids(target_prefix, /*source=*/false), options);
        },
        options.replace_unknowns ? sources : std::vector<std::vector<std::string>>{});
  }

  // A decoder-only model's continuations of prompts (text or ids), as translate_* return them.
  template <typename Prompt>
  std::vector<PyTranslationResult> generate(const std::vector<Prompt>& prompts,
                                            tfm::TranslationOptions options,
                                            bool return_scores) const {
    options.return_scores = return_scores;
    check(options, /*generate=*/true);
    const Kind kind = std::is_same_v<Prompt, std::string> ? Kind::text : Kind::ids;
    return wrap(kind, return_scores, options,
                [&] { return translator_->generate_async(prompts, options); })
        .result();
  }

  // generate_ids without waiting (tfm.Generator's asynchronous calls and per-call batches).
  PyAsync submit_generate_ids(const std::vector<std::vector<int64_t>>& prompts,
                              tfm::TranslationOptions options, bool return_scores) const {
    options.return_scores = return_scores;  // what the results carry (greedy skips them)
    check(options, /*generate=*/true);
    return wrap(Kind::ids, return_scores, options,
                [&] { return translator_->generate_async(prompts, options); });
  }

  // Per token (CTranslate2's ScoringResult.log_probs), for ids, token lists or texts; Ctrl-C
  // stops before the next batch (run_interruptibly).
  std::vector<std::vector<float>> score_per_token_ids(
      const std::vector<std::vector<int64_t>>& sources,
      const std::vector<std::vector<int64_t>>& targets, int64_t max_input_length,
      std::stop_source stop) const {
    return run_interruptibly(
        [&](std::stop_token token) {
          return translator_->score_batch_per_token(sources, targets, max_input_length, token);
        },
        stop);
  }

  // A decoder-only model's sequences as the decoder reads them (tfm.Generator.score_batch).
  // (tokens scored, log-probs) per sequence.
  std::vector<std::pair<std::vector<int64_t>, std::vector<float>>> score_sequences(
      const std::vector<std::vector<int64_t>>& seqs, int64_t max_input_length,
      std::stop_source stop) const {
    std::vector<tfm::SequenceScore> scored = run_interruptibly(
        [&](std::stop_token token) {
          return translator_->score_sequences(seqs, max_input_length, token);
        },
        stop);
    std::vector<std::pair<std::vector<int64_t>, std::vector<float>>> out;
    for (auto& s : scored) out.emplace_back(std::move(s.tokens), std::move(s.log_probs));
    return out;
  }

  std::vector<std::vector<float>> score_per_token_tokens(
      const std::vector<std::vector<std::string>>& sources,
      const std::vector<std::vector<std::string>>& targets, int64_t max_input_length,
      std::stop_source stop) const {
    return run_interruptibly(
        [&](std::stop_token token) {
          return translator_->score_batch_per_token(to_ids(sources, true), to_ids(targets, false),
                                                    max_input_length, token);
        },
        stop);
  }

  std::vector<std::vector<float>> score_per_token_text(const std::vector<std::string>& sources,
                                                       const std::vector<std::string>& targets,
                                                       int64_t max_input_length,
                                                       std::stop_source stop) const {
    return run_interruptibly(
        [&](std::stop_token token) {
          std::vector<std::vector<int64_t>> s, t;
          for (const std::string& x : sources) s.push_back(translator_->tokenize_source(x));
          for (const std::string& y : targets) t.push_back(translator_->tokenize_target(y));
          return translator_->score_batch_per_token(s, t, max_input_length, token);
        },
        stop);
  }

  // Returns the warnings (sources cut to the model's positions), for Python's warnings module.
  std::string translate_file(const std::string& in_path, const std::string& out_path,
                             const tfm::TranslationOptions& options, bool ids, bool n_best,
                             int64_t read_ahead, const std::string& prefix_path) const {
    check(options);
    return stream_file(in_path, out_path, options, ids, n_best, read_ahead, prefix_path, false);
  }

  // A decoder-only model continues each line of in_path (generate_stream).
  void generate_file(const std::string& in_path, const std::string& out_path,
                     const tfm::TranslationOptions& options, bool ids, bool n_best,
                     int64_t read_ahead) const {
    check(options, /*generate=*/true);
    stream_file(in_path, out_path, options, ids, n_best, read_ahead, "", true);
  }

  const tfm::Translator& get() const { return *translator_; }

  // translate_batch's window (read_ahead batches of max_batch_size sentences) checked by the
  // library's validators: tfm::InvalidArgument (InvalidArgumentError) names the bad one.
  void check_window(int64_t max_batch_size, int64_t read_ahead) const {
    tfm::TranslatorOptions o = translator_->options();
    o.max_batch_size = max_batch_size;
    tfm::validate_translator_options(o, python_name);
    tfm::validate_stream_options({.read_ahead = read_ahead}, python_name);
  }

 private:
  std::string stream_file(const std::string& in_path, const std::string& out_path,
                          const tfm::TranslationOptions& options, bool ids, bool n_best,
                          int64_t read_ahead, const std::string& prefix_path, bool generate) const {
    tfm::StreamOptions so;
    so.ids = ids;
    so.n_best = n_best;
    so.read_ahead = read_ahead > 0 ? read_ahead : translator_->options().max_batch_size * 8;
    std::ostringstream warnings;
    so.warnings = &warnings;
    // Never over an input or inside the model (docs/failure.md, "Output paths").
    tfm::check_output_path(out_path, {.kind = tfm::OutputKind::stream,
                                      .name = "output_path",
                                      .inputs = {in_path, prefix_path},
                                      .model_dirs = {translator_->model_info().directory}});
    // Input first: a missing input leaves no empty output file (as `tfm translate` does).
    std::ifstream in(in_path, std::ios::binary);
    if (!in.is_open()) raise_os_error(errno, in_path);
    std::ifstream prefix_in;
    if (!prefix_path.empty()) {
      prefix_in.open(prefix_path, std::ios::binary);
      if (!prefix_in.is_open()) raise_os_error(errno, prefix_path);
      so.target_prefix = &prefix_in;
      so.target_prefix_name = prefix_path;
    }
    std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
    if (!out.is_open()) raise_os_error(errno, out_path);
    // Ctrl-C stops reading and cancels the windows in flight (run_interruptibly).
    const int close_errno = run_interruptibly([&](std::stop_token stop) {
      so.stop = stop;
      if (generate)
        translator_->generate_stream(in, out, options, so, in_path);
      else
        translator_->translate_stream(in, out, options, so, in_path);
      errno = 0;
      out.close();
      return errno;
    });
    if (out.fail()) raise_os_error(close_errno ? close_errno : EIO, out_path);
    return warnings.str();
  }

  // The options checked in Python's names before the call (the library checks them again, in
  // its own). A call of the wrong kind for the model fails in the call itself, with that reason.
  void check(const tfm::TranslationOptions& options, bool generate = false) const {
    if (translator_->model_info().decoder_only != generate) return;
    tfm::validate_translation_options(options, translator_->model_info(), python_name);
  }

  // A call submitted (the GIL released: tokenising and checking the sources is the library's).
  template <typename Submit>
  PyAsync wrap(Kind kind, bool return_scores, const tfm::TranslationOptions& options, Submit submit,
               std::vector<std::vector<std::string>> sources = {}) const {
    tfm::AsyncResults results;
    {
      py::gil_scoped_release release;
      results = submit();
    }
    return PyAsync(std::move(results), *translator_, kind, return_scores, options,
                   std::move(sources));
  }

  std::vector<std::vector<int64_t>> to_ids(const std::vector<std::vector<std::string>>& batch,
                                           bool source) const {
    std::vector<std::vector<int64_t>> ids(batch.size());
    for (size_t i = 0; i < batch.size(); ++i)
      ids[i] = source ? translator_->source_tokens_to_ids(batch[i])
                      : translator_->target_tokens_to_ids(batch[i]);
    return ids;
  }

  std::unique_ptr<tfm::Translator> translator_;
};

void bind_options(py::module_& m) {
  py::class_<tfm::TranslationOptions>(m, "TranslationOptions",
                                      "The search options of one call (tfm::TranslationOptions).")
      .def(py::init<>())
      .def_readwrite("beam_size", &tfm::TranslationOptions::beam_size)
      .def_readwrite("num_hypotheses", &tfm::TranslationOptions::num_hypotheses)
      .def_readwrite("length_penalty", &tfm::TranslationOptions::length_penalty)
      .def_readwrite("normalize_scores", &tfm::TranslationOptions::normalize_scores)
      .def_readwrite("max_length_factor", &tfm::TranslationOptions::max_length_factor)
      .def_readwrite("max_length_extra", &tfm::TranslationOptions::max_length_extra)
      .def_readwrite("max_decoding_length", &tfm::TranslationOptions::max_decoding_length)
      .def_readwrite("min_decoding_length", &tfm::TranslationOptions::min_decoding_length)
      .def_readwrite("max_input_length", &tfm::TranslationOptions::max_input_length)
      .def_readwrite("renormalize_min_length", &tfm::TranslationOptions::renormalize_min_length)
      .def_readwrite("patience", &tfm::TranslationOptions::patience)
      .def_readwrite("score_prefix", &tfm::TranslationOptions::score_prefix)
      .def_readwrite("suppress_sequences", &tfm::TranslationOptions::suppress_sequences)
      .def_readwrite("repetition_penalty", &tfm::TranslationOptions::repetition_penalty)
      .def_readwrite("no_repeat_ngram_size", &tfm::TranslationOptions::no_repeat_ngram_size)
      .def_readwrite("end_token", &tfm::TranslationOptions::end_token)
      .def_readwrite("return_alternatives", &tfm::TranslationOptions::return_alternatives)
      .def_readwrite("search_rule", &tfm::TranslationOptions::search_rule)
      .def_readwrite("force_end_token", &tfm::TranslationOptions::force_end_token)
      .def_readwrite("coverage_penalty", &tfm::TranslationOptions::coverage_penalty)
      .def_readwrite("min_alternative_expansion_prob",
                     &tfm::TranslationOptions::min_alternative_expansion_prob)
      .def_readwrite("attention_framing", &tfm::TranslationOptions::attention_framing)
      .def_readwrite("return_end_token", &tfm::TranslationOptions::return_end_token)
      .def_property(
          "length_penalty_form",
          [](const tfm::TranslationOptions& o) {
            return std::string(tfm::length_penalty_name(o.length_penalty_form));
          },
          [](tfm::TranslationOptions& o, const std::string& name) {
            o.length_penalty_form = tfm::parse_length_penalty(name);
          },
          "gnmt | power")
      .def_property(
          "search",
          [](const tfm::TranslationOptions& o) { return std::string(tfm::search_name(o.search)); },
          [](tfm::TranslationOptions& o, const std::string& name) {
            o.search = tfm::parse_search(name);
          },
          "greedy | beam | sampling")
      .def_readwrite("sampling_temperature", &tfm::TranslationOptions::sampling_temperature)
      .def_readwrite("sampling_topk", &tfm::TranslationOptions::sampling_topk)
      .def_readwrite("sampling_topp", &tfm::TranslationOptions::sampling_topp)
      .def_readwrite("seed", &tfm::TranslationOptions::seed)
      .def_readwrite("return_attention", &tfm::TranslationOptions::return_attention)
      .def_readwrite("return_scores", &tfm::TranslationOptions::return_scores)
      .def_readwrite("return_logits_vocab", &tfm::TranslationOptions::return_logits_vocab)
      .def_readwrite("replace_unknowns", &tfm::TranslationOptions::replace_unknowns)
      .def_readwrite("prefix_bias_beta", &tfm::TranslationOptions::prefix_bias_beta)
      .def_readwrite("max_new_tokens", &tfm::TranslationOptions::max_new_tokens)
      .def_readwrite("target_lang", &tfm::TranslationOptions::target_lang)
      .def_readwrite("source_lang", &tfm::TranslationOptions::source_lang)
      .def_property(
          "step_callback",
          [](const tfm::TranslationOptions& o) { return static_cast<bool>(o.step_callback); },
          [](tfm::TranslationOptions& o, py::object fn) {
            if (fn.is_none()) {
              o.step_callback = {};
              return;
            }
            if (!PyCallable_Check(fn.ptr()))
              throw py::type_error("step_callback must be callable or None");
            auto callback = std::make_shared<const PyStepCallback>(std::move(fn));
            o.step_callback = [callback](const tfm::StepResult& s) { return (*callback)(s); };
          },
          "a callable(StepResult) -> bool, or None (reads: whether one is set)");

  py::class_<tfm::StepResult>(m, "StepResult",
                              "One token a search chose (tfm::StepResult, step_callback's).")
      .def_readonly("index", &tfm::StepResult::index)
      .def_readonly("step", &tfm::StepResult::step)
      .def_readonly("token_id", &tfm::StepResult::token_id)
      .def_readonly("token", &tfm::StepResult::token)
      .def_readonly("log_prob", &tfm::StepResult::log_prob)
      .def_readonly("in_prefix", &tfm::StepResult::in_prefix)
      .def_readonly("is_last", &tfm::StepResult::is_last)
      .def("__repr__", [](const tfm::StepResult& s) {
        return "StepResult(index=" + std::to_string(s.index) + ", step=" + std::to_string(s.step) +
               ", token_id=" + std::to_string(s.token_id) +
               ", is_last=" + (s.is_last ? "True" : "False") + ")";
      });
}

void bind_model_info(py::module_& m) {
  using I = tfm::ModelInfo;
  py::class_<I>(m, "ModelInfo", "What a model directory holds (tfm::ModelInfo).")
      .def_readonly("directory", &I::directory)
      .def_readonly("config_json", &I::config_json, "the whole config.json, as `tfm info` prints")
      .def_readonly("decoder_only", &I::decoder_only)
      .def_readonly("d_model", &I::d_model)
      .def_readonly("heads", &I::heads)
      .def_readonly("d_ff", &I::d_ff)
      .def_readonly("encoder_layers", &I::encoder_layers)
      .def_readonly("decoder_layers", &I::decoder_layers)
      .def_readonly("src_vocab_size", &I::src_vocab_size)
      .def_readonly("trg_vocab_size", &I::trg_vocab_size)
      .def_readonly("max_length", &I::max_length, "positions, counting BOS/EOS")
      .def_readonly("pad_id", &I::pad_id)
      .def_readonly("bos_id", &I::bos_id)
      .def_readonly("eos_id", &I::eos_id)
      .def_readonly("source_bos", &I::source_bos)
      .def_readonly("source_eos", &I::source_eos)
      .def_readonly("parameter_count", &I::parameter_count)
      .def_readonly("src_vocab_path", &I::src_vocab_path, "empty when the model has none")
      .def_readonly("trg_vocab_path", &I::trg_vocab_path, "empty when the model has none")
      .def_readonly("family", &I::family, "a converted Transformers model's family, else empty")
      .def_readonly("tokenizer", &I::tokenizer, "a converted model's tokenizer kind, else empty")
      .def_readonly("compute_type", &I::compute_type,
                    "the precision chosen at conversion (\"int8\", \"bf16\"), else empty")
      .def_readonly("search_rule", &I::search_rule,
                    "\"tfm\", or \"transformers\" for a converted model (generate()'s rules)")
      .def("__repr__", [](const I& i) {
        return "ModelInfo(directory=" + py::repr(py::str(i.directory)).cast<std::string>() +
               ", d_model=" + std::to_string(i.d_model) + ", heads=" + std::to_string(i.heads) +
               ", layers=" + std::to_string(i.encoder_layers) + "+" +
               std::to_string(i.decoder_layers) +
               ", parameter_count=" + std::to_string(i.parameter_count) + ")";
      });
  m.def(
      "read_model_info",
      [](const std::string& dir) {
        py::gil_scoped_release release;
        return tfm::read_model_info(dir);
      },
      py::arg("model_dir"),
      "The ModelInfo of a model directory, reading its config but not its weights.");
}

void bind_results(py::module_& m) {
  using R = PyTranslationResult;
  py::class_<R>(m, "TranslationResult",
                "The translation of one source: hypotheses best first (text for text input, "
                "token lists for token input, token id lists for id input; none for an empty "
                "source), with return_scores=True their ranking scores and log-probabilities, "
                "and with return_attention=True their attention.")
      .def_readonly("hypotheses", &R::hypotheses)
      .def_readonly("scores", &R::scores,
                    "ranking scores (length penalty applied); empty unless return_scores")
      .def_readonly("log_probs", &R::log_probs,
                    "log P(hypothesis + EOS | source); empty unless return_scores")
      .def_readonly("attention", &R::attention,
                    "per hypothesis, one row per target token (the prefix's included): the last "
                    "decoder layer's cross-attention averaged over heads, over the source "
                    "positions the model reads (the source's tokens, then EOS by default: "
                    "ModelInfo.source_bos/source_eos); empty unless return_attention")
      .def_readonly("logits", &R::logits,
                    "with return_logits_vocab=True, per hypothesis one array.array('f') per "
                    "decoder step (the prefix's steps and the end token's included): the target "
                    "vocabulary's logits the search chose from, after the logits processors and "
                    "before the softmax, as CTranslate2's; numpy.asarray reads each as float32; "
                    "empty otherwise")
      .def_readonly("source_truncated", &R::source_truncated,
                    "the source was longer than the model's positions and was cut")
      // CTranslate2's older view of a result as a list of dicts, which its programs still use.
      .def("__len__", [](const R& r) { return r.hypotheses.size(); })
      .def("__getitem__",
           [](const R& r, size_t i) {
             if (i >= r.hypotheses.size()) throw py::index_error();
             py::dict d;
             d["tokens"] = r.hypotheses[i];
             if (!r.scores.empty()) d["score"] = r.scores[i];
             if (!r.attention.empty()) d["attention"] = r.attention[i];
             return d;
           })
      .def("__repr__", [](const R& r) {
        std::string s =
            "TranslationResult(hypotheses=" + py::repr(r.hypotheses).cast<std::string>();
        if (!r.scores.empty()) s += ", scores=" + py::repr(r.scores).cast<std::string>();
        return s + ")";
      });
}

void bind_async(py::module_& m) {
  py::class_<PyAsync>(m, "AsyncTranslation",
                      "The results of one submitted call (Translator.submit_*): result() waits.")
      .def("done", &PyAsync::done, "whether every result is in")
      .def("result", &PyAsync::result, "waits, then the TranslationResults in input order")
      .def("cancel", &PyAsync::cancel, "gives up: the sources not yet in a batch leave the queue");
  // One scoring call's stop: requested when its caller gives up (run_interruptibly).
  py::class_<std::stop_source>(m, "StopSource", "A std::stop_source: stops a scoring call.")
      .def(py::init<>())
      .def("request_stop", [](std::stop_source& s) { s.request_stop(); });
}

void bind_translator(py::module_& m) {
  using T = PyTranslator;
  py::class_<T>(m, "Translator", "The C++ tfm::Translator (use tfm.Translator).")
      .def(py::init<const std::string&, const std::string&, const std::string&, int, int, int64_t,
                    int64_t>(),
           py::arg("model_dir"), py::arg("device"), py::arg("compute_type"),
           py::arg("intra_threads"), py::arg("inter_threads"), py::arg("max_batch_size"),
           py::arg("max_batch_tokens"))
      .def("submit_text", &T::submit_text, py::arg("source"), py::arg("target_prefix"),
           py::arg("options"), py::arg("return_scores"), py::keep_alive<0, 1>())
      .def("submit_ids", &T::submit_ids, py::arg("source"), py::arg("target_prefix"),
           py::arg("options"), py::arg("return_scores"), py::keep_alive<0, 1>())
      .def("submit_tokens", &T::submit_tokens, py::arg("source"), py::arg("target_prefix"),
           py::arg("options"), py::arg("return_scores"), py::keep_alive<0, 1>())
      .def("generate_text", &T::generate<std::string>, py::arg("prompts"), py::arg("options"),
           py::arg("return_scores"))
      .def("generate_ids", &T::generate<std::vector<int64_t>>, py::arg("prompts"),
           py::arg("options"), py::arg("return_scores"))
      .def("submit_generate_ids", &T::submit_generate_ids, py::arg("prompts"), py::arg("options"),
           py::arg("return_scores"))
      .def("score_sequences", &T::score_sequences, py::arg("sequences"),
           py::arg("max_input_length"), py::arg("stop"))
      .def("score_per_token_ids", &T::score_per_token_ids, py::arg("source"), py::arg("target"),
           py::arg("max_input_length"), py::arg("stop"))
      .def("score_per_token_tokens", &T::score_per_token_tokens, py::arg("source"),
           py::arg("target"), py::arg("max_input_length"), py::arg("stop"))
      .def("score_per_token_text", &T::score_per_token_text, py::arg("source"), py::arg("target"),
           py::arg("max_input_length"), py::arg("stop"))
      .def(
          "tokenize_target",
          [](const T& t, const std::string& text) { return t.get().tokenize_target(text); },
          py::arg("text"))
      .def(
          "target_tokens_to_ids",
          [](const T& t, const std::vector<std::string>& tokens) {
            return t.get().target_tokens_to_ids(tokens);
          },
          py::arg("tokens"))
      .def(
          "target_ids_to_tokens",
          [](const T& t, const std::vector<int64_t>& ids) {
            return t.get().target_ids_to_tokens(ids);
          },
          py::arg("ids"))
      .def(
          "source_tokens",
          [](const T& t, const std::string& text) { return t.get().source_tokens(text); },
          py::arg("text"))
      .def("translate_file", &T::translate_file, py::arg("source_path"), py::arg("output_path"),
           py::arg("options"), py::arg("ids"), py::arg("n_best"), py::arg("read_ahead"),
           py::arg("target_path"))
      .def("check_window", &T::check_window, py::arg("max_batch_size"), py::arg("read_ahead"))
      .def("generate_file", &T::generate_file, py::arg("prompt_path"), py::arg("output_path"),
           py::arg("options"), py::arg("ids"), py::arg("n_best"), py::arg("read_ahead"))
      .def_property_readonly("model_info", [](const T& t) { return t.get().model_info(); })
      .def("default_options", [](const T& t) { return t.get().default_options(); })
      .def_property_readonly("has_vocabularies",
                             [](const T& t) { return t.get().has_vocabularies(); })
      .def_property_readonly("device",
                             [](const T& t) { return tfm::device_name(t.get().options().device); })
      .def_property_readonly(
          "compute_type",
          [](const T& t) { return tfm::compute_type_name(t.get().options().compute_type); })
      .def_property_readonly("intra_threads",
                             [](const T& t) { return t.get().options().intra_threads; })
      .def_property_readonly("inter_threads",
                             [](const T& t) { return t.get().options().inter_threads; })
      .def_property_readonly("max_batch_size",
                             [](const T& t) { return t.get().options().max_batch_size; })
      .def_property_readonly("max_batch_tokens",
                             [](const T& t) { return t.get().options().max_batch_tokens; });
}

}  // namespace

PYBIND11_MODULE(_tfm, m) {
  m.doc() = "tfm's C++ library (libtfm); the public API is the tfm package.";
  // tfm.Error for every library failure, a RuntimeError; InvalidArgumentError, also a
  // ValueError, for a bad option value. Both carry the library's message without the source
  // location (tfm::Error::message()).
  static py::exception<tfm::Error> error(m, "Error", PyExc_RuntimeError);
  // tfm::QueueFull needs no class of its own here: no Python call is refused by a full queue.
  static py::handle invalid_argument = PyErr_NewExceptionWithDoc(
      "tfm.InvalidArgumentError", "A bad option value: a tfm.Error and a ValueError.",
      py::make_tuple(error, py::handle(PyExc_ValueError)).ptr(), nullptr);
  if (!invalid_argument) throw py::error_already_set();
  // Shown as tfm.Error in tracebacks: the package re-exports them.
  error.attr("__module__") = "tfm";
  invalid_argument.attr("__module__") = "tfm";
  m.attr("InvalidArgumentError") = invalid_argument;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tfm::InvalidArgument& e) {
      PyErr_SetString(invalid_argument.ptr(), e.message().c_str());
    } catch (const tfm::Error& e) {
      PyErr_SetString(error.ptr(), e.message().c_str());
    }
  });

  bind_options(m);
  bind_model_info(m);
  bind_results(m);
  bind_async(m);
  bind_translator(m);
  tfm_python::bind_trainer(m);
  tfm_python::bind_package(m);
  m.def(
      "convert_transformers",
      [](const std::string& dir, const std::string& out, const std::string& quantization,
         bool force) {
        py::gil_scoped_release release;
        return tfm::convert_transformers(dir, out, {quantization, force});
      },
      py::arg("model_dir"), py::arg("output_dir"), py::arg("quantization"), py::arg("force"),
      "tfm::convert_transformers (use tfm.convert_transformers).");
  m.def(
      "search_for",
      [](int64_t beam_size, bool sampling) {
        return std::string(tfm::search_name(tfm::search_for(beam_size, sampling)));
      },
      py::arg("beam_size"), py::arg("sampling"),
      "The search the usual spellings ask for: sampling when asked, else beam when "
      "beam_size > 1, else greedy.");
  m.def(
      "parse_compute_type",
      [](const std::string& name) { return tfm::compute_type_name(tfm::parse_compute_type(name)); },
      py::arg("name"), "tfm's name of a compute type (accepts CTranslate2's names too).");
}
