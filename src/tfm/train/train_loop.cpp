#include "tfm/train/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>

#include "tfm/autograd/tape.h"
#include "tfm/core/file_util.h"
#include "tfm/model/checkpoint.h"
#include "tfm/ops/cross_entropy.h"
#include "tfm/ops/host.h"
#include "tfm/train/data_parallel.h"
#include "tfm/train/grad_norm.h"
#include "tfm/train/validate.h"

namespace tfm {

namespace fs = std::filesystem;

namespace {

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

bool higher_is_better(ValidMetric m) {
  return m == ValidMetric::accuracy || m == ValidMetric::bleu;
}

std::vector<std::pair<std::string, Tensor>> parameter_list(const Transformer& model) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, p] : model.named_parameters()) out.emplace_back(name, *p);
  return out;
}

}  // namespace

ValidMetric parse_valid_metric(const std::string& name) {
  if (name == "loss") return ValidMetric::loss;
  if (name == "ppl" || name == "perplexity") return ValidMetric::ppl;
  if (name == "accuracy") return ValidMetric::accuracy;
  if (name == "bleu") return ValidMetric::bleu;
  TFM_FAIL() << "unknown validation metric \"" << name << "\" (loss, ppl, accuracy, bleu)";
  return ValidMetric::ppl;
}

const char* to_string(ValidMetric m) {
  switch (m) {
    case ValidMetric::loss:
      return "loss";
    case ValidMetric::ppl:
      return "ppl";
    case ValidMetric::accuracy:
      return "accuracy";
    case ValidMetric::bleu:
      return "bleu";
  }
  return "?";
}

TrainLoop::TrainLoop(TrainLoopOptions options, Transformer& model, Batcher train,
                     std::vector<Example> valid, TrainLog& log, BleuHook bleu)
    : o_(std::move(options)),
      model_(model),
      train_(std::move(train)),
      valid_(std::move(valid)),
      log_(log),
      bleu_(std::move(bleu)),
      dropout_gen_(o_.dropout_seed),
      params_(parameter_list(model)),
      adam_(params_, o_.adam) {
  TFM_CHECK(!o_.model_dir.empty()) << "train: no model directory";
  TFM_CHECK(!train_.examples().empty()) << "train: no training examples";
  TFM_CHECK(o_.update_freq >= 1) << "update_freq must be >= 1, got " << o_.update_freq;
  TFM_CHECK(o_.label_smoothing >= 0 && o_.label_smoothing < 1)
      << "label_smoothing must be in [0, 1), got " << o_.label_smoothing;
  TFM_CHECK(o_.clip_norm >= 0) << "clip_norm must be >= 0, got " << o_.clip_norm;
  TFM_CHECK(o_.max_nonfinite >= 1) << "max_nonfinite must be >= 1";
  TFM_CHECK(o_.log_every >= 1) << "log_every must be >= 1";
  TFM_CHECK(o_.valid_every >= 0 && o_.save_every >= 0 && o_.keep_last >= 0 &&
            o_.early_stopping >= 0 && o_.max_updates >= 0 && o_.max_epochs >= 0 &&
            o_.max_minutes >= 0)
      << "train: negative counts or limits";
  TFM_CHECK(o_.metric != ValidMetric::bleu || bleu_)
      << "validation metric bleu needs validation BLEU (a BLEU hook: a validation set and a "
         "vocabulary)";
  TFM_CHECK(o_.early_stopping == 0 || !valid_.empty()) << "early stopping needs a validation set";
  // bf16 mixed precision multiplies bf16 weight copies the optimiser keeps current (the same
  // roundings the GEMMs made of the weights at every call before).
  if (model_.train_compute() == ComputeType::bfloat16) adam_.keep_bf16_copies();
  // A linear schedule decays over the run's budget: --max-updates (absolute) and/or the training
  // time of earlier runs plus this run's --max-minutes (set again when run() starts).
  if (o_.schedule.kind == ScheduleKind::linear) {
    o_.schedule.total = o_.max_updates;
    o_.schedule.total_seconds = o_.max_minutes * 60.0;
    // Every rank must step with the same rate, and each reads its own clock.
    TFM_CHECK(o_.schedule.total > 0 || world().size() == 1)
        << "a linear schedule over a time budget needs a budget of updates (max_updates) when "
           "training in several processes";
  }
  learning_rate(o_.schedule, 1);  // validates the schedule options now, not at update 1
  model_.set_generator(&dropout_gen_);
}

dist::World& TrainLoop::world() const {
  return o_.world != nullptr ? *o_.world : dist::single_process();
}

std::string TrainLoop::agreed_stop(const std::atomic<bool>* stop, double run_seconds) {
  const bool asked = stop != nullptr && stop->load();
  std::string limit = limit_reached(run_seconds);
  if (world().size() == 1) {
    if (asked) return "interrupted";
    if (!limit.empty()) return limit;
    return stop_early_ ? "early stopping" : "";
  }
  // Updates and epochs are the same on every rank; time and early stopping are rank 0's.
  const double mine[3] = {asked ? 1.0 : 0.0, limit == "time limit" ? 1.0 : 0.0,
                          stop_early_ ? 1.0 : 0.0};
  const std::vector<double> all = world().allgather(mine);
  bool any_asked = false;
  for (int r = 0; r < world().size(); ++r) any_asked |= all[3 * static_cast<size_t>(r)] != 0;
  if (any_asked) return "interrupted";
  if (limit == "time limit") limit.clear();
  if (!limit.empty()) return limit;
  if (all[1] != 0) return "time limit";
  return all[2] != 0 ? "early stopping" : "";
}

bool TrainLoop::resume() {
  if (!has_train_state(o_.model_dir)) return false;
  p_ = load_train_state(o_.model_dir, model_, adam_);
  TFM_CHECK(p_.data_fingerprint == train_.fingerprint())
      << "cannot resume " << o_.model_dir << ": the training data or the batching options "
      << "(batch tokens, seed, maximum length, vocabulary) differ from those of the run that "
      << "saved it; rerun with the same data and options, or use another model directory";
  train_.seek(p_.position);
  dropout_gen_.set_state(p_.dropout_seed, p_.dropout_stream);
  run_start_elapsed_ = p_.elapsed_seconds;
  last_saved_update_ = p_.updates;
  if (p_.world_size != world().size()) {
    log_.line("note: the run so far trained in " + std::to_string(p_.world_size) +
              " process(es), this one in " + std::to_string(world().size()) +
              ": the batch stream goes on where it was, each update now taking " +
              std::to_string(world().size() * o_.update_freq) +
              " batches (the continuation is not the one the earlier process count would give)");
    p_.world_size = world().size();
  }
  log_.line("resuming from update " + std::to_string(p_.updates) + " (epoch " +
            std::to_string(p_.position.epoch + 1) + ", batch " + std::to_string(p_.position.index) +
            ")");
  return true;
}

double TrainLoop::elapsed_now() const {
  return run_start_elapsed_ + (now_seconds() - run_start_);
}

std::string TrainLoop::limit_reached(double run_seconds) const {
  if (o_.max_updates > 0 && p_.updates >= o_.max_updates) return "max updates";
  if (o_.max_epochs > 0 && train_.position().epoch >= o_.max_epochs) return "max epochs";
  if (o_.max_minutes > 0 && run_seconds >= o_.max_minutes * 60.0) return "time limit";
  return "";
}

namespace {

// TFM_GRAD_OVERLAP=0 sends the gradient buckets after the backward pass instead of during it:
// the same sums, for measuring what the overlap hides (bench/mpi_scaling.sh).
bool overlap_gradient_sum() {
  const char* v = std::getenv("TFM_GRAD_OVERLAP");
  return v == nullptr || std::string(v) != "0";
}

}  // namespace

StepStats& StepStats::operator+=(const StepStats& o) {
  loss_sum += o.loss_sum;
  nll_sum += o.nll_sum;
  tokens += o.tokens;
  correct += o.correct;
  sentences += o.sentences;
  src_tokens += o.src_tokens;
  return *this;
}

StepStats StepStats::summed(dist::World& world) const {
  // One message of doubles: the counts are exact in a double far beyond any run's.
  const double mine[] = {loss_sum,
                         nll_sum,
                         static_cast<double>(tokens),
                         static_cast<double>(correct),
                         static_cast<double>(sentences),
                         static_cast<double>(src_tokens)};
  constexpr size_t n = std::size(mine);
  const std::vector<double> all = world.allgather(mine);
  StepStats total;
  for (size_t at = 0; at + n <= all.size(); at += n) {
    const double* r = all.data() + at;
    total += StepStats{r[0],
                       r[1],
                       static_cast<int64_t>(r[2]),
                       static_cast<int64_t>(r[3]),
                       static_cast<int64_t>(r[4]),
                       static_cast<int64_t>(r[5])};
  }
  return total;
}

StepStats TrainLoop::accumulate_gradients(OverlappedGradientSum* gradient_sum) {
  const ModelConfig& c = model_.config();
  StepStats step;
  // Batch i of an update draws its dropout streams from base + i · (streams a forward draws),
  // whichever rank runs it: N ranks × update_freq k see the masks of one rank × N·k, and one
  // rank draws them in sequence, as a single process always has.
  const auto per_batch = static_cast<uint64_t>(model_.dropout_streams_per_forward());
  dist::World& dw = world();
  const int64_t share = o_.update_freq, total = share * dw.size();
  const uint64_t base = dropout_gen_.position();
  const int64_t my_last = (dw.rank() + 1) * share - 1;
  for (int64_t i = 0; i < total; ++i) {
    if (i / share != dw.rank()) {
      train_.skip();
      continue;
    }
    const uint64_t first = base + static_cast<uint64_t>(i) * per_batch;
    dropout_gen_.set_state(dropout_gen_.seed(), first);
    const Batch b = train_.next();
    const Tensor logits = model_.forward(b.src, b.trg_in);  // (B, T, V)
    TFM_CHECK(dropout_gen_.position() - first == per_batch)
        << "a training batch drew " << dropout_gen_.position() - first
        << " dropout streams, the model's count is " << per_batch
        << " (Transformer::dropout_streams_per_forward is out of step with the forward)";
    const CrossEntropyResult ce = softmax_cross_entropy(
        logits, to_device(b.trg_out, logits.device()), o_.label_smoothing, c.pad_id);
    step.sentences += b.trg_in.shape()[0];
    step.src_tokens += b.src_tokens;
    if (ce.tokens == 0) {
      autograd::clear_tape();
      continue;
    }
    // The loss is a mean over this batch's tokens; backpropagating tokens × loss sums the
    // per-token gradients, and the update divides by all tokens of the update.
    const Tensor seed =
        Tensor::full({}, static_cast<double>(ce.tokens), DType::f32, ce.loss.device());
    if (gradient_sum && i == my_last)
      autograd::backward(ce.loss, seed, gradient_sum->hooks());
    else
      autograd::backward(ce.loss, seed);
    step.loss_sum += to_host<float>(ce.loss)[0] * static_cast<double>(ce.tokens);
    step.nll_sum += ce.nll_sum;
    step.tokens += ce.tokens;
    step.correct += ce.correct;
  }
  dropout_gen_.set_state(dropout_gen_.seed(), base + static_cast<uint64_t>(total) * per_batch);
  return step;
}

void TrainLoop::skip_nonfinite(bool loss_finite) {
  adam_.zero_grad();
  ++p_.nonfinite_skipped;
  ++p_.nonfinite_in_a_row;
  log_.line("warning: non-finite " + std::string(loss_finite ? "gradient" : "loss") +
            " at update " + std::to_string(p_.updates + 1) + "; update skipped (" +
            std::to_string(p_.nonfinite_in_a_row) + " in a row, " +
            std::to_string(p_.nonfinite_skipped) + " in all)");
  if (p_.nonfinite_in_a_row < o_.max_nonfinite) return;
  save_checkpoint();  // the parameters are the last finite ones; keep the data position
  // Every rank stops here; none may end the job before rank 0 has saved.
  if (world().size() > 1) world().allgather(std::span<const double>());
  TFM_FAIL() << "stopping: " << p_.nonfinite_in_a_row
             << " non-finite updates in a row (the limit is " << o_.max_nonfinite
             << "). Lower the learning rate or lengthen the warmup, clip the gradient norm, "
             << "or check the training data; the last good state is saved in " << o_.model_dir;
}

void TrainLoop::apply_update(const StepStats& step, double gnorm, double scale) {
  p_.nonfinite_in_a_row = 0;
  const int64_t n = p_.updates + 1;
  const double lr = learning_rate(o_.schedule, n, elapsed_now());
  adam_.step(lr, scale * clip_coefficient(gnorm, o_.clip_norm));
  adam_.zero_grad();
  p_.updates = n;
  p_.sentences += step.sentences;
  p_.src_tokens += step.src_tokens;
  p_.trg_tokens += step.tokens;
  LogWindow& w = p_.window;
  ++w.updates;
  w.sentences += step.sentences;
  w.src_tokens += step.src_tokens;
  w.trg_tokens += step.tokens;
  w.correct += step.correct;
  w.loss_sum += step.loss_sum;
  w.nll_sum += step.nll_sum;
  w.gnorm_sum += gnorm;
  update_losses_.push_back(step.tokens > 0 ? step.loss_sum / static_cast<double>(step.tokens)
                                           : 0.0);
}

bool TrainLoop::train_update() {
  model_.set_training(true);
  dist::World& dw = world();
  // With several ranks, the gradient sum overlaps this rank's last backward pass of the update.
  std::optional<OverlappedGradientSum> gradient_sum;
  if (dw.size() > 1) gradient_sum.emplace(dw, adam_.arena(), overlap_gradient_sum());
  StepStats step = accumulate_gradients(gradient_sum ? &*gradient_sum : nullptr);
  if (gradient_sum) {
    const double comm_start = now_seconds();
    step = step.summed(dw);
    gradient_sum->finish();
    comm_seconds_ += now_seconds() - comm_start;
    buckets_early_ += gradient_sum->posted_early();
    buckets_total_ += gradient_sum->buckets();
  }
  const double scale = step.tokens > 0 ? 1.0 / static_cast<double>(step.tokens) : 0.0;
  const double gnorm = global_grad_norm(params_) * scale;
  if (!std::isfinite(step.loss_sum) || !std::isfinite(gnorm)) {
    skip_nonfinite(std::isfinite(step.loss_sum));
    return false;
  }
  apply_update(step, gnorm, scale);
  return true;
}

void TrainLoop::log_window() {
  const LogWindow& w = p_.window;
  if (w.updates == 0) return;
  const double t = now_seconds();
  const double secs = std::max(1e-9, t - window_start_);
  const double tok = static_cast<double>(std::max<int64_t>(w.trg_tokens, 1));
  TrainStatsEvent e;
  e.update = p_.updates;
  e.epoch = train_.position().epoch + 1;
  e.loss = w.loss_sum / tok;
  e.perplexity = std::exp(w.nll_sum / tok);
  e.accuracy = static_cast<double>(w.correct) / tok;
  e.learning_rate = learning_rate(o_.schedule, std::max<int64_t>(1, p_.updates), elapsed_now());
  e.grad_norm = w.gnorm_sum / static_cast<double>(w.updates);
  e.tokens_per_second = static_cast<double>(w.src_tokens + w.trg_tokens) / secs;
  e.sentences = p_.sentences;
  e.target_tokens = p_.trg_tokens;
  e.elapsed_seconds = run_start_elapsed_ + (t - run_start_);
  std::string s =
      "epoch " + std::to_string(train_.position().epoch + 1) + " | update " +
      std::to_string(p_.updates) + " | sents " + format_count(static_cast<double>(p_.sentences)) +
      " | trg tok " + format_count(static_cast<double>(p_.trg_tokens)) + " | loss " +
      fmt("%.4f", w.loss_sum / tok) + " | ppl " + fmt("%.2f", std::exp(w.nll_sum / tok)) +
      " | acc " + fmt("%.1f%%", 100.0 * static_cast<double>(w.correct) / tok) + " | lr " +
      fmt("%.3e", learning_rate(o_.schedule, std::max<int64_t>(1, p_.updates), elapsed_now())) +
      " | gnorm " + fmt("%.3f", w.gnorm_sum / static_cast<double>(w.updates)) + " | " +
      format_count(static_cast<double>(w.src_tokens + w.trg_tokens) / secs) + " tok/s | " +
      format_duration(run_start_elapsed_ + (t - run_start_));
  if (world().size() > 1) {
    // The wait for the sums (loss and gradients), with the compute skew between the ranks.
    // and how many gradient buckets went out during the backward pass.
    s += " | allreduce " + fmt("%.1f", 1e3 * comm_seconds_ / static_cast<double>(w.updates)) +
         " ms/update, " + std::to_string(buckets_early_) + "/" + std::to_string(buckets_total_) +
         " buckets overlapped";
    comm_seconds_ = 0;
    buckets_early_ = buckets_total_ = 0;
  }
  log_.line(s);
  log_.stats(e);
  p_.window = LogWindow{};
  window_start_ = t;
}

double TrainLoop::metric_value(double loss, double ppl, double accuracy, double bleu) const {
  switch (o_.metric) {
    case ValidMetric::loss:
      return loss;
    case ValidMetric::ppl:
      return ppl;
    case ValidMetric::accuracy:
      return accuracy;
    case ValidMetric::bleu:
      return bleu;
  }
  return ppl;
}

void TrainLoop::copy_files(const std::string& dir) const {
  for (const auto& f : o_.files_to_copy) {
    copy_file_atomic(f, (fs::path(dir) / fs::path(f).filename()).string());
  }
}

void TrainLoop::validate() {
  if (!leader()) {
    p_.last_valid_update = p_.updates;  // the end-of-run check below agrees with rank 0's
    return;
  }
  model_.set_training(false);  // no dropout, and no random stream drawn, in the BLEU hook either
  const ValidLoss vl = validation_loss(model_, valid_, o_.valid_batch_tokens);
  double bleu = std::numeric_limits<double>::quiet_NaN();
  if (bleu_) {
    // Decoding runs on weights packed for it; the next training step drops them again.
    model_.bind_inference(ComputeType::float32);
    bleu = bleu_(model_);
    model_.unbind_inference();
  }
  const double m = metric_value(vl.loss(), vl.perplexity(), vl.accuracy(), bleu);
  last_valid_ppl_ = vl.perplexity();
  const bool better = p_.best_update == 0 ||
                      (higher_is_better(o_.metric) ? m > p_.best_metric : m < p_.best_metric);
  if (better) {
    p_.best_metric = m;
    p_.best_update = p_.updates;
    p_.bad_validations = 0;
    // Whole or not at all: a full disk mid-copy leaves the previous best/ as it was.
    write_dir_atomic((fs::path(o_.model_dir) / "best").string(), [&](const std::string& tmp) {
      save_model(model_, tmp);
      copy_files(tmp);
    });
  } else {
    ++p_.bad_validations;
  }
  p_.last_valid_update = p_.updates;
  validated_since_save_ = true;
  std::string s = "valid | update " + std::to_string(p_.updates) + " | loss " +
                  fmt("%.4f", vl.loss()) + " | ppl " + fmt("%.3f", vl.perplexity()) + " | acc " +
                  fmt("%.1f%%", 100.0 * vl.accuracy());
  if (bleu_) s += " | bleu " + fmt("%.2f", bleu);
  s += " | best " + std::string(to_string(o_.metric)) + " " + fmt("%.4g", p_.best_metric) +
       " (update " + std::to_string(p_.best_update) + ")";
  if (better) s += " | saved best/";
  log_.line(s);
  TrainValidationEvent e;
  e.update = p_.updates;
  e.loss = vl.loss();
  e.perplexity = vl.perplexity();
  e.accuracy = vl.accuracy();
  e.bleu = bleu_ ? bleu : -1.0;
  e.improved = better;
  e.best_metric = p_.best_metric;
  e.best_update = p_.best_update;
  log_.validation(e);
  if (o_.early_stopping > 0 && p_.bad_validations >= o_.early_stopping) stop_early_ = true;
}

void TrainLoop::save_checkpoint() {
  p_.position = train_.position();
  p_.dropout_seed = dropout_gen_.seed();
  p_.dropout_stream = dropout_gen_.position();
  p_.elapsed_seconds = run_start_elapsed_ + (now_seconds() - run_start_);
  p_.world_size = world().size();
  if (!leader()) {  // rank 0 owns the files
    last_saved_update_ = p_.updates;
    validated_since_save_ = false;
    return;
  }
  // train_state first: it alone is read on resume, so a kill after it is harmless.
  save_train_state(o_.model_dir, model_, adam_, p_);
  save_model(model_, o_.model_dir);
  if (o_.keep_last > 0) {
    const fs::path root = fs::path(o_.model_dir) / "checkpoints";
    const std::string dir = (root / ("update-" + std::to_string(p_.updates))).string();
    write_dir_atomic(dir, [&](const std::string& tmp) {
      save_model(model_, tmp);
      copy_files(tmp);
    });
    std::vector<std::pair<int64_t, fs::path>> kept;
    for (const auto& e : fs::directory_iterator(root)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("update-", 0) != 0) continue;
      try {
        kept.emplace_back(std::stoll(name.substr(7)), e.path());
      } catch (const std::exception&) {
      }
    }
    std::sort(kept.begin(), kept.end());
    for (size_t i = 0; i + static_cast<size_t>(o_.keep_last) < kept.size(); ++i) {
      std::error_code ec;
      fs::remove_all(kept[i].second, ec);
    }
  }
  last_saved_update_ = p_.updates;
  validated_since_save_ = false;
  log_.line("saved checkpoint at update " + std::to_string(p_.updates) + " in " + o_.model_dir);
  log_.checkpoint(p_.updates, o_.model_dir);
}

TrainLoopResult TrainLoop::run(const std::atomic<bool>* stop) {
  if (!resume()) {
    p_ = TrainProgress{};
    p_.data_fingerprint = train_.fingerprint();
    p_.dropout_seed = dropout_gen_.seed();
    p_.world_size = world().size();
    log_.line("training from scratch: " + std::to_string(model_.parameter_count()) +
              " parameters, " + std::to_string(train_.examples().size()) + " training pairs" +
              (valid_.empty() ? std::string()
                              : ", " + std::to_string(valid_.size()) + " validation pairs"));
  }
  log_.started(p_.updates);
  run_start_ = now_seconds();
  if (o_.schedule.kind == ScheduleKind::linear && o_.max_minutes > 0)
    o_.schedule.total_seconds = run_start_elapsed_ + o_.max_minutes * 60.0;
  window_start_ = run_start_;
  TrainLoopResult r;
  for (;;) {
    r.stop_reason = agreed_stop(stop, now_seconds() - run_start_);
    if (!r.stop_reason.empty()) {
      r.interrupted = r.stop_reason == "interrupted";
      break;
    }
    if (!train_update()) continue;
    if (log_.wants_updates()) {
      TrainUpdateEvent e;
      e.update = p_.updates;
      e.max_updates = o_.max_updates;
      e.epoch = train_.position().epoch + 1;
      e.loss = update_losses_.back();
      e.run_seconds = now_seconds() - run_start_;
      if (o_.max_updates > 0) e.fraction_done = static_cast<double>(p_.updates) / o_.max_updates;
      if (o_.max_minutes > 0)
        e.fraction_done = std::max(e.fraction_done, e.run_seconds / (o_.max_minutes * 60));
      e.fraction_done = std::min(e.fraction_done, 1.0);
      log_.update(e);
    }
    if (p_.updates % o_.log_every == 0) log_window();
    if (o_.valid_every > 0 && !valid_.empty() && p_.updates % o_.valid_every == 0) validate();
    if (o_.save_every > 0 && p_.updates % o_.save_every == 0) save_checkpoint();
  }
  if (!r.interrupted && !valid_.empty() && p_.updates > 0 && p_.last_valid_update != p_.updates) {
    validate();
  }
  if (last_saved_update_ != p_.updates || validated_since_save_ || p_.updates == 0) {
    save_checkpoint();
  }
  r.updates = p_.updates;
  r.last_valid_ppl = last_valid_ppl_;
  r.best_metric = p_.best_metric;
  r.best_update = p_.best_update;
  log_.line("stopped (" + r.stop_reason + ") at update " + std::to_string(p_.updates) + ", epoch " +
            std::to_string(train_.position().epoch + 1) + "; " +
            format_count(static_cast<double>(p_.sentences)) + " sentences, " +
            format_count(static_cast<double>(p_.trg_tokens)) + " target tokens in " +
            format_duration(p_.elapsed_seconds) +
            (p_.nonfinite_skipped
                 ? "; " + std::to_string(p_.nonfinite_skipped) + " non-finite updates skipped"
                 : std::string()) +
            (p_.best_update > 0
                 ? "; best " + std::string(to_string(o_.metric)) + " " +
                       fmt("%.4g", p_.best_metric) + " at update " +
                       std::to_string(p_.best_update) + " (" + o_.model_dir + "/best)"
                 : std::string()));
  return r;
}

}  // namespace tfm
