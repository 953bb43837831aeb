#include "tfm/runtime/train_options.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"
#include "tfm/core/parallel.h"
#include "tfm/core/validate.h"
#include "tfm/runtime/translation_options.h"
#include "tfm/train/schedule.h"
#include "tfm/train/train_loop.h"
#include "tfm/train/train_state.h"

namespace tfm::runtime {

namespace {

// The files a run reads, in combinations that make sense for its kind of model.
void check_corpus_options(const TrainOptions& o, const OptionSpeller& name) {
  const auto n = [&](std::string_view f) { return name(f); };
  if (o.decoder_only) {
    // A language model: target sentences alone, one a line, and one vocabulary.
    TFM_CHECK_ARG(!o.train_trg.empty() && o.train_src.empty() && o.train_tsv.empty())
        << "a decoder-only model trains on " << n("train_trg") << " alone (one sentence a line; "
        << "no " << n("train_src") << " or " << n("train_tsv") << ")";
    TFM_CHECK_ARG(o.valid_src.empty()) << "a decoder-only model validates on " << n("valid_trg")
                                       << " alone (no " << n("valid_src") << ")";
    TFM_CHECK_ARG(!o.vocab.empty() && o.vocab_src.empty() && o.vocab_trg.empty())
        << "a decoder-only model takes one vocabulary, " << n("vocab") << " (not " << n("vocab_src")
        << " / " << n("vocab_trg") << ")";
    TFM_CHECK_ARG(!o.valid_bleu && o.metric != "bleu")
        << n("valid_bleu") << " and " << n("metric")
        << " bleu score translations; a decoder-only model has no sources to translate";
    TFM_CHECK_ARG(o.early_stopping == 0 || !o.valid_trg.empty())
        << n("early_stopping") << " needs a validation set (" << n("valid_trg") << ")";
    return;
  }
  const bool tsv = !o.train_tsv.empty();
  TFM_CHECK_ARG(tsv != (!o.train_src.empty() || !o.train_trg.empty()))
      << "give either " << n("train_src") << " and " << n("train_trg") << ", or " << n("train_tsv");
  TFM_CHECK_ARG(tsv || (!o.train_src.empty() && !o.train_trg.empty()))
      << n("train_src") << " and " << n("train_trg") << " go together";
  TFM_CHECK_ARG(o.valid_src.empty() == o.valid_trg.empty())
      << n("valid_src") << " and " << n("valid_trg") << " go together";
  const bool joint = !o.vocab.empty();
  TFM_CHECK_ARG(joint != (!o.vocab_src.empty() || !o.vocab_trg.empty()))
      << "give either " << n("vocab") << " (joint) or " << n("vocab_src") << " and "
      << n("vocab_trg");
  TFM_CHECK_ARG(joint || (!o.vocab_src.empty() && !o.vocab_trg.empty()))
      << n("vocab_src") << " and " << n("vocab_trg") << " go together";
  TFM_CHECK_ARG(!o.valid_bleu || !o.valid_src.empty())
      << n("valid_bleu") << " needs " << n("valid_src") << " and " << n("valid_trg");
  TFM_CHECK_ARG(o.metric != "bleu" || o.valid_bleu)
      << n("metric") << " bleu needs " << n("valid_bleu");
  TFM_CHECK_ARG(o.early_stopping == 0 || !o.valid_src.empty())
      << n("early_stopping") << " needs a validation set (" << n("valid_src") << ", "
      << n("valid_trg") << ")";
}

}  // namespace

void check_train_options(const TrainOptions& o, const OptionSpeller& name) {
  const auto n = [&](std::string_view f) { return name(f); };
  check_thread_count(n("threads").c_str(), o.threads);
  require_in_range(n("batch_tokens"), o.batch_tokens, 1, int64_t{1} << 30);
  require_in_range(n("update_freq"), o.update_freq, 1, 1 << 20);
  require_at_least(n("max_updates"), o.max_updates, 0);
  require_at_least(n("max_epochs"), o.max_epochs, 0);
  require_in_range(n("max_minutes"), o.max_minutes, 0.0, 1e9);
  require_in_range(n("lr"), o.lr, 0.0, 10.0, /*lo_open=*/true);
  require_in_range(n("lr_factor"), o.lr_factor, 0.0, 1e6, /*lo_open=*/true);
  require_in_range(n("label_smoothing"), o.label_smoothing, 0.0, 1.0, false, /*hi_open=*/true);
  require_in_range(n("clip_norm"), o.clip_norm, 0.0, 1e9);
  require_in_range(n("weight_decay"), o.weight_decay, 0.0, 1.0);
  // Negative means the preset's; -1 is what the CLI and the docs use.
  if (!(o.dropout < 0)) require_in_range(n("dropout"), o.dropout, 0.0, 1.0, false, true);
  require_in_range(n("max_ratio"), o.max_ratio, 0.0, 1e6);
  require_in_range(n("warmup"), o.warmup, 0, int64_t{1} << 40);
  require_in_range(n("max_length"), o.max_length, 1, 1 << 20);
  require_at_least(n("save_every"), o.save_every, 0);
  require_at_least(n("valid_every"), o.valid_every, 0);
  require_in_range(n("valid_batch_tokens"), o.valid_batch_tokens, 1, int64_t{1} << 30);
  require_at_least(n("keep_last"), o.keep_last, 0);
  require_at_least(n("early_stopping"), o.early_stopping, 0);
  require_at_least(n("log_every"), o.log_every, 1);
  require_at_least(n("max_nonfinite"), o.max_nonfinite, 1);

  TFM_CHECK_ARG(!o.model_dir.empty()) << "no " << n("model_dir") << " given";
  TFM_CHECK_ARG(o.preset == "tiny" || o.preset == "small" || o.preset == "quick" ||
                o.preset == "base" || o.preset == "big" || !o.model_config.empty())
      << n("preset") << " \"" << o.preset << "\" is not one of tiny, small, quick, base, big";
  TFM_CHECK_ARG(o.optimizer == "adam" || o.optimizer == "adamw")
      << n("optimizer") << " \"" << o.optimizer << "\" is not adam or adamw";
  try {
    parse_schedule(o.lr_schedule);
  } catch (const Error& e) {
    TFM_FAIL_ARG() << n("lr_schedule") << ": " << e.message();
  }
  try {
    if (!o.metric.empty()) parse_valid_metric(o.metric);
  } catch (const Error& e) {
    TFM_FAIL_ARG() << n("metric") << ": " << e.message();
  }
  TFM_CHECK_ARG(o.compute_type != ComputeType::int8)
      << n("compute_type") << " int8 is an inference compute type; training takes fp32, bf16 or "
      << "auto";
  check_device_available(o.device, n("device"));

  check_corpus_options(o, name);
}

TrainOptions resolve_train_options(TrainOptions o) {
  if (o.metric.empty()) o.metric = o.valid_bleu ? "bleu" : "ppl";
  o.compute_type = resolve_compute_type(o.compute_type, o.device, /*training=*/true);
  return o;
}

void check_fresh_start(const TrainOptions& o, const OptionSpeller& name) {
  namespace fs = std::filesystem;
  if (has_train_state(o.model_dir)) return;
  const std::string existing = existing_run_output(o.model_dir);
  if (existing.empty()) return;
  const std::string config_path = (fs::path(o.model_dir) / "train_config.json").string();
  if (existing == (fs::path(o.model_dir) / "best").string() && fs::exists(config_path)) {
    try {
      if (nlohmann::json::parse(read_file(config_path)) ==
          nlohmann::json::parse(train_options_json(o)))
        return;
    } catch (const std::exception&) {
    }
  }
  TFM_FAIL() << o.model_dir << " holds a model or checkpoints (" << existing
             << ") but no training state to resume (train_state/state.safetensors): starting from "
                "scratch would overwrite them. Train again with "
             << name("overwrite") << " to replace them, or use another model directory";
}

std::string train_options_json(const TrainOptions& o) {
  nlohmann::ordered_json j;
  j["model"] = o.model_dir;
  j["train-src"] = o.train_src;
  j["train-trg"] = o.train_trg;
  j["train-tsv"] = o.train_tsv;
  // Only when set: the records of encoder-decoder runs stay what they were.
  if (o.decoder_only) j["decoder-only"] = true;
  j["valid-src"] = o.valid_src;
  j["valid-trg"] = o.valid_trg;
  j["vocab"] = o.vocab;
  j["vocab-src"] = o.vocab_src;
  j["vocab-trg"] = o.vocab_trg;
  j["preset"] = o.preset;
  j["model-config"] = o.model_config;
  j["dropout"] = o.dropout;
  j["batch-tokens"] = o.batch_tokens;
  j["update-freq"] = o.update_freq;
  j["max-length"] = o.max_length;
  j["max-ratio"] = o.max_ratio;
  j["seed"] = o.seed;
  j["max-updates"] = o.max_updates;
  j["max-epochs"] = o.max_epochs;
  j["max-minutes"] = o.max_minutes;
  j["lr-schedule"] = o.lr_schedule;
  j["lr"] = o.lr;
  j["lr-factor"] = o.lr_factor;
  j["warmup"] = o.warmup;
  j["optimizer"] = o.optimizer;
  j["weight-decay"] = o.weight_decay;
  j["label-smoothing"] = o.label_smoothing;
  j["clip-norm"] = o.clip_norm;
  j["device"] = device_name(o.device);
  j["precision"] = compute_type_name(o.compute_type);
  j["threads"] = o.threads;
  j["valid-every"] = o.valid_every;
  j["valid-batch-tokens"] = o.valid_batch_tokens;
  j["valid-bleu"] = o.valid_bleu;
  j["metric"] = o.metric;
  j["early-stopping"] = o.early_stopping;
  j["save-every"] = o.save_every;
  j["keep-last"] = o.keep_last;
  j["log-every"] = o.log_every;
  j["max-nonfinite"] = o.max_nonfinite;
  if (!o.tensorboard.empty()) j["tensorboard"] = o.tensorboard;
  return j.dump(2) + "\n";
}

}  // namespace tfm::runtime
