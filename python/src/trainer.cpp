// tfm._tfm.Trainer: tfm::Trainer with the GIL released while it prepares and trains. The
// callbacks take the GIL for their Python call. Python's signal handlers only set a flag that
// Python code must check, so after every update the binding checks it (PyErr_CheckSignals): a
// Ctrl-C, or an exception raised by a callback, asks the trainer to stop (it saves a checkpoint)
// and is raised once train() has returned.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <tfm/trainer.h>
#include <tfm/types.h>

#include <memory>
#include <optional>
#include <string>

#include "bindings.h"

namespace py = pybind11;

namespace tfm_python {

namespace {

class PyTrainer {
 public:
  PyTrainer(const tfm::TrainOptions& options, py::object on_log, py::object on_update,
            py::object on_stats, py::object on_validation, py::object on_checkpoint)
      : on_log_(std::move(on_log)),
        on_update_(std::move(on_update)),
        on_stats_(std::move(on_stats)),
        on_validation_(std::move(on_validation)),
        on_checkpoint_(std::move(on_checkpoint)) {
    tfm::validate_train_options(options);
    tfm::TrainCallbacks cb;
    cb.on_log = [this](const std::string& line) { call(on_log_, line); };
    // Always: the signal check runs here even without a Python callback.
    cb.on_update = [this](const tfm::TrainUpdateEvent& e) { call(on_update_, e); };
    cb.on_stats = [this](const tfm::TrainStatsEvent& e) { call(on_stats_, e); };
    cb.on_validation = [this](const tfm::TrainValidationEvent& e) { call(on_validation_, e); };
    cb.on_checkpoint = [this](int64_t update, const std::string& dir) {
      call(on_checkpoint_, update, dir);
    };
    py::gil_scoped_release release;
    trainer_ = std::make_unique<tfm::Trainer>(options, std::move(cb));
  }

  tfm::TrainResult train() {
    tfm::TrainResult r;
    {
      py::gil_scoped_release release;
      r = trainer_->train();
    }
    if (pending_) {
      // The checkpoint is saved; now the interrupt or the callback's exception.
      py::error_already_set e = std::move(*pending_);
      pending_.reset();
      e.restore();
      throw py::error_already_set();
    }
    return r;
  }

  void request_stop() { trainer_->request_stop(); }
  const tfm::Trainer& get() const { return *trainer_; }

 private:
  // Calls a Python callback (if any) with the GIL; any Python exception, or a pending signal
  // (KeyboardInterrupt), stops the trainer and waits for train() to return.
  template <typename... Args>
  void call(const py::object& f, const Args&... args) {
    py::gil_scoped_acquire gil;
    if (pending_) return;  // stopping: no more Python calls
    try {
      if (!f.is_none()) f(args...);
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    } catch (py::error_already_set& e) {
      pending_.emplace(std::move(e));
      trainer_->request_stop();
    }
  }

  py::object on_log_, on_update_, on_stats_, on_validation_, on_checkpoint_;
  std::optional<py::error_already_set> pending_;
  std::unique_ptr<tfm::Trainer> trainer_;
};

template <typename C, typename T>
void field(py::class_<C>& c, const char* name, T C::*member, const char* doc) {
  c.def_readwrite(name, member, doc);
}

void bind_options(py::module_& m) {
  using O = tfm::TrainOptions;
  py::class_<O> c(m, "TrainOptions", "tfm::TrainOptions (use tfm.Trainer's keyword arguments).");
  c.def(py::init<>());
  field(c, "model_dir", &O::model_dir, "model directory");
  field(c, "overwrite", &O::overwrite, "start from scratch, replacing an earlier run");
  field(c, "train_src", &O::train_src, "training source text");
  field(c, "train_trg", &O::train_trg, "training target text");
  field(c, "train_tsv", &O::train_tsv, "training pairs as source<TAB>target lines");
  field(c, "decoder_only", &O::decoder_only,
        "a decoder-only model (a language model) on train_trg alone, with vocab");
  field(c, "valid_src", &O::valid_src, "validation source text");
  field(c, "valid_trg", &O::valid_trg, "validation target text");
  field(c, "vocab", &O::vocab, "joint SentencePiece model");
  field(c, "vocab_src", &O::vocab_src, "source SentencePiece model");
  field(c, "vocab_trg", &O::vocab_trg, "target SentencePiece model");
  field(c, "preset", &O::preset, "tiny | small | quick | base | big");
  field(c, "model_config", &O::model_config, "a config.json instead of the preset");
  field(c, "dropout", &O::dropout, "dropout; negative: the preset's");
  field(c, "batch_tokens", &O::batch_tokens, "padded tokens a batch");
  field(c, "update_freq", &O::update_freq, "batches summed into one update");
  field(c, "max_length", &O::max_length, "skip pairs with a longer side (pieces)");
  field(c, "max_ratio", &O::max_ratio, "skip pairs with a larger length ratio (0: off)");
  field(c, "seed", &O::seed, "initialisation, batch order and dropout");
  field(c, "max_updates", &O::max_updates, "stop after N updates (0: no limit)");
  field(c, "max_epochs", &O::max_epochs, "stop after N epochs (0: no limit)");
  field(c, "max_minutes", &O::max_minutes, "stop after M minutes of this run (0: no limit)");
  field(c, "lr_schedule", &O::lr_schedule, "noam | inverse_sqrt | constant");
  field(c, "lr", &O::lr, "peak learning rate");
  field(c, "lr_factor", &O::lr_factor, "noam's factor");
  field(c, "warmup", &O::warmup, "warm-up updates");
  field(c, "optimizer", &O::optimizer, "adam | adamw");
  field(c, "weight_decay", &O::weight_decay, "weight decay");
  field(c, "label_smoothing", &O::label_smoothing, "label smoothing epsilon");
  field(c, "clip_norm", &O::clip_norm, "max global gradient norm (0: off)");
  field(c, "threads", &O::threads, "threads (0: all cores)");
  field(c, "valid_every", &O::valid_every, "validate every N updates (0: at the end)");
  field(c, "valid_batch_tokens", &O::valid_batch_tokens, "validation batch size");
  field(c, "valid_bleu", &O::valid_bleu, "also compute validation BLEU (greedy)");
  field(c, "metric", &O::metric,
        "loss | ppl | accuracy | bleu ('': bleu with valid_bleu, else ppl)");
  field(c, "early_stopping", &O::early_stopping, "stop after N validations without improvement");
  field(c, "save_every", &O::save_every, "checkpoint every N updates (0: at the end)");
  field(c, "keep_last", &O::keep_last, "checkpoints/update-N kept");
  field(c, "log_every", &O::log_every, "log a line every N updates");
  field(c, "max_nonfinite", &O::max_nonfinite, "stop after N non-finite updates in a row");
  field(c, "tensorboard", &O::tensorboard, "a directory for TensorBoard event files ('': none)");
  c.def_property(
      "device", [](const O& o) { return std::string(tfm::device_name(o.device)); },
      [](O& o, const std::string& d) { o.device = tfm::parse_device(d); });
  c.def_property(
      "compute_type",
      [](const O& o) { return std::string(tfm::compute_type_name(o.compute_type)); },
      [](O& o, const std::string& t) { o.compute_type = tfm::parse_compute_type(t); });
}

void bind_events(py::module_& m) {
  using U = tfm::TrainUpdateEvent;
  py::class_<U>(m, "TrainUpdateEvent", "After each update.")
      .def_readonly("update", &U::update)
      .def_readonly("max_updates", &U::max_updates)
      .def_readonly("epoch", &U::epoch)
      .def_readonly("loss", &U::loss)
      .def_readonly("run_seconds", &U::run_seconds)
      .def_readonly("fraction_done", &U::fraction_done, "of the nearest limit; negative: none")
      .def("__repr__", [](const U& e) {
        return "TrainUpdateEvent(update=" + std::to_string(e.update) +
               ", epoch=" + std::to_string(e.epoch) + ", loss=" + std::to_string(e.loss) + ")";
      });
  using S = tfm::TrainStatsEvent;
  py::class_<S>(m, "TrainStatsEvent", "Every log_every updates: means over the window.")
      .def_readonly("update", &S::update)
      .def_readonly("epoch", &S::epoch)
      .def_readonly("loss", &S::loss)
      .def_readonly("perplexity", &S::perplexity)
      .def_readonly("accuracy", &S::accuracy)
      .def_readonly("learning_rate", &S::learning_rate)
      .def_readonly("grad_norm", &S::grad_norm)
      .def_readonly("tokens_per_second", &S::tokens_per_second)
      .def_readonly("sentences", &S::sentences)
      .def_readonly("target_tokens", &S::target_tokens)
      .def_readonly("elapsed_seconds", &S::elapsed_seconds);
  using V = tfm::TrainValidationEvent;
  py::class_<V>(m, "TrainValidationEvent", "After each validation.")
      .def_readonly("update", &V::update)
      .def_readonly("loss", &V::loss)
      .def_readonly("perplexity", &V::perplexity)
      .def_readonly("accuracy", &V::accuracy)
      .def_readonly("bleu", &V::bleu, "negative without valid_bleu")
      .def_readonly("improved", &V::improved, "best/ was saved")
      .def_readonly("best_metric", &V::best_metric)
      .def_readonly("best_update", &V::best_update);
  using R = tfm::TrainResult;
  py::class_<R>(m, "TrainResult", "How a training run ended.")
      .def_readonly("updates", &R::updates)
      .def_readonly("stop_reason", &R::stop_reason)
      .def_readonly("interrupted", &R::interrupted)
      .def_readonly("elapsed_seconds", &R::elapsed_seconds)
      .def_readonly("best_update", &R::best_update)
      .def_readonly("best_metric", &R::best_metric)
      .def_readonly("last_valid_perplexity", &R::last_valid_perplexity)
      .def_readonly("model_dir", &R::model_dir)
      .def_readonly("best_dir", &R::best_dir)
      .def("__repr__", [](const R& r) {
        return "TrainResult(updates=" + std::to_string(r.updates) + ", stop_reason='" +
               r.stop_reason + "', model_dir='" + r.model_dir + "')";
      });
}

}  // namespace

void bind_trainer(py::module_& m) {
  bind_options(m);
  bind_events(m);
  py::class_<PyTrainer>(m, "Trainer", "The C++ tfm::Trainer (use tfm.Trainer).")
      .def(py::init<const tfm::TrainOptions&, py::object, py::object, py::object, py::object,
                    py::object>(),
           py::arg("options"), py::arg("on_log"), py::arg("on_update"), py::arg("on_stats"),
           py::arg("on_validation"), py::arg("on_checkpoint"))
      .def("train", &PyTrainer::train)
      .def("request_stop", &PyTrainer::request_stop)
      .def_property_readonly("resuming", [](const PyTrainer& t) { return t.get().resuming(); })
      .def_property_readonly("model_info", [](const PyTrainer& t) { return t.get().model_info(); })
      .def_property_readonly("options", [](const PyTrainer& t) { return t.get().options(); });
}

}  // namespace tfm_python
