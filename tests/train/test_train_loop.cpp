// The training loop on a tiny model and corpus: it learns (memorises a small corpus), resumes
// bit for bit, skips non-finite updates, keeps the best and the last N checkpoints, stops early,
// and refuses a training state it cannot trust.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "support/test_util.h"
#include "tfm/model/checkpoint.h"
#include "tfm/train/train_loop.h"
#include "tfm/train/validate.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

// A toy translation task: the target is the source reversed, shifted by 1 (ids 4..V-1).
std::vector<Example> toy_corpus(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<Example> out;
  RandomStream r(seed, 0);
  uint64_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = 2 + static_cast<int64_t>(r.uniform(k++) * 5);
    Example e;
    for (int64_t t = 0; t < len; ++t) {
      e.src.push_back(4 + static_cast<int32_t>(r.uniform(k++) * (vocab - 5)));
    }
    for (auto it = e.src.rbegin(); it != e.src.rend(); ++it) e.trg.push_back(*it + 1);
    out.push_back(e);
  }
  return out;
}

ModelConfig toy_config(int64_t vocab, double dropout) {
  ModelConfig c = ModelConfig::preset("tiny");
  c.src_vocab_size = c.trg_vocab_size = vocab;
  c.share_embeddings = true;
  c.dropout = dropout;
  return c;
}

class TrainLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tfm_trainer_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  TrainLoopOptions options(const std::string& name) const {
    TrainLoopOptions o;
    o.model_dir = (dir_ / name).string();
    o.schedule.kind = ScheduleKind::inverse_sqrt;
    o.schedule.lr = 3e-3;
    o.schedule.warmup = 20;
    o.log_every = 5;
    o.valid_every = 0;
    o.save_every = 0;
    o.keep_last = 0;
    o.dropout_seed = 7;
    return o;
  }
  Batcher batcher(const std::vector<Example>& data, int64_t batch_tokens = 120) const {
    BatcherOptions bo;
    bo.batch_tokens = batch_tokens;
    bo.seed = 3;
    return Batcher(data, bo);
  }
  // Runs a fresh TrainLoop (new model from `seed`, so resumed weights must come from the state).
  TrainLoopResult train(const TrainLoopOptions& o, const std::vector<Example>& data,
                        const std::vector<Example>& valid, double dropout, uint64_t seed,
                        std::vector<double>* losses = nullptr, BleuHook bleu = {},
                        ComputeType precision = ComputeType::float32) {
    Transformer model(toy_config(24, dropout), seed);
    model.set_train_compute(precision);
    TrainLog log((fs::path(o.model_dir).parent_path() / "log.txt").string());
    TrainLoop t(o, model, batcher(data), valid, log, std::move(bleu));
    TrainLoopResult r = t.run();
    if (losses) *losses = t.update_losses();
    return r;
  }
  fs::path dir_;
};

TEST_F(TrainLoopTest, MemorisesATinyCorpus) {
  // fp32, and bf16 mixed precision (bf16 GEMMs, f32 master weights) to the same standard.
  for (ComputeType precision : {ComputeType::float32, ComputeType::bfloat16}) {
    SCOPED_TRACE(compute_type_name(precision));
    const auto data = toy_corpus(12, 24, 1);
    TrainLoopOptions o = options(std::string("m_") + compute_type_name(precision));
    o.max_updates = 400;
    o.label_smoothing = 0.0;
    train(o, data, {}, 0.0, 1, nullptr, {}, precision);
    auto model = load_model(o.model_dir);
    const ValidLoss v = validation_loss(*model, data, 4096);
    EXPECT_GE(v.accuracy(), 0.99) << "token accuracy on the training corpus";
    EXPECT_LT(v.loss(), 0.1);
  }
}

TEST_F(TrainLoopTest, ResumeIsBitExactWithDropoutAndAccumulation) {
  for (ComputeType precision : {ComputeType::float32, ComputeType::bfloat16}) {
    SCOPED_TRACE(compute_type_name(precision));
    const auto data = toy_corpus(40, 24, 2);
    TrainLoopOptions o = options(std::string("straight_") + compute_type_name(precision));
    o.update_freq = 2;
    o.save_every = 7;
    o.clip_norm = 0.5;
    o.max_updates = 30;
    std::vector<double> straight, first, second;
    train(o, data, {}, 0.1, 5, &straight, {}, precision);
    o.model_dir = (dir_ / (std::string("resumed_") + compute_type_name(precision))).string();
    o.max_updates = 15;
    train(o, data, {}, 0.1, 5, &first, {}, precision);
    o.max_updates = 30;
    // Another init seed: the weights must come from the state.
    train(o, data, {}, 0.1, 99, &second, {}, precision);
    ASSERT_EQ(straight.size(), 30u);
    ASSERT_EQ(first.size() + second.size(), 30u);
    for (size_t i = 0; i < 30; ++i) {
      const double resumed = i < first.size() ? first[i] : second[i - first.size()];
      EXPECT_EQ(straight[i], resumed) << "loss of update " << i + 1;
    }
    auto a =
        load_model((dir_ / (std::string("straight_") + compute_type_name(precision))).string());
    auto b = load_model(o.model_dir);
    const auto pa = a->named_parameters(), pb = b->named_parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t k = 0; k < pa.size(); ++k) {
      EXPECT_TRUE(testing::bitwise_equal(*pa[k].second, *pb[k].second)) << pa[k].first;
    }
  }
}

TEST_F(TrainLoopTest, ResumeRefusesOtherDataAndCorruptState) {
  const auto data = toy_corpus(20, 24, 3);
  TrainLoopOptions o = options("m");
  o.max_updates = 4;
  train(o, data, {}, 0.0, 1);
  o.max_updates = 8;
  EXPECT_TFM_ERROR(train(o, toy_corpus(21, 24, 3), {}, 0.0, 1),
                   "training data or the batching options");
  const fs::path state = fs::path(o.model_dir) / "train_state" / "state.safetensors";
  const auto size = fs::file_size(state);
  fs::resize_file(state, size / 2);
  EXPECT_TFM_ERROR(train(o, data, {}, 0.0, 1), "cannot resume from");
  EXPECT_TFM_ERROR(train(o, data, {}, 0.0, 1), "to start training from scratch");
}

TEST_F(TrainLoopTest, NonFiniteUpdatesAreSkippedThenStop) {
  const auto data = toy_corpus(20, 24, 4);
  TrainLoopOptions o = options("m");
  o.max_updates = 50;
  o.max_nonfinite = 3;
  Transformer model(toy_config(24, 0.0), 1);
  // A NaN weight makes every loss NaN.
  std::vector<Tensor> before;
  for (const auto& [name, p] : model.named_parameters()) before.push_back(p->clone());
  Tensor& w = *model.named_parameters().front().second;
  w.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  TrainLog log((dir_ / "log.txt").string());
  TrainLoop t(o, model, batcher(data), {}, log);
  EXPECT_TFM_ERROR(t.run(), "3 non-finite updates in a row");
  EXPECT_EQ(t.progress().nonfinite_skipped, 3);
  EXPECT_EQ(t.progress().updates, 0);
  // Nothing was updated: every other weight is as initialised.
  auto params = model.named_parameters();
  for (size_t k = 1; k < params.size(); ++k) {
    EXPECT_TRUE(testing::bitwise_equal(*params[k].second, before[k])) << params[k].first;
  }
  EXPECT_TRUE(has_train_state(o.model_dir)) << "the last good state is saved before stopping";
  std::ifstream in(dir_ / "log.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("non-finite loss at update 1; update skipped"), std::string::npos) << text;
}

TEST_F(TrainLoopTest, BestCheckpointAndEarlyStoppingFollowTheMetric) {
  const auto data = toy_corpus(20, 24, 5);
  TrainLoopOptions o = options("m");
  o.max_updates = 100;
  o.valid_every = 2;
  o.save_every = 2;
  o.keep_last = 2;
  o.metric = ValidMetric::bleu;
  o.early_stopping = 3;
  // BLEU by validation: best at the second one (update 4), then three without improvement.
  const std::vector<double> scores = {10, 12, 11, 12, 9, 50};
  size_t calls = 0;
  BleuHook hook = [&](const Transformer&) { return scores.at(calls++); };
  const TrainLoopResult r = train(o, data, data, 0.0, 1, nullptr, hook);
  EXPECT_EQ(r.stop_reason, "early stopping");
  EXPECT_EQ(r.updates, 10);
  EXPECT_EQ(r.best_update, 4);
  EXPECT_EQ(r.best_metric, 12);
  EXPECT_EQ(calls, 5u);
  // best/ holds the weights of update 4: the kept checkpoint of update 4 is gone (keep_last 2),
  // so compare with a straight run stopped there.
  EXPECT_TRUE(fs::exists(fs::path(o.model_dir) / "best" / "model.safetensors"));
  std::vector<std::string> kept;
  for (const auto& e : fs::directory_iterator(fs::path(o.model_dir) / "checkpoints")) {
    kept.push_back(e.path().filename().string());
  }
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<std::string>{"update-10", "update-8"}));
  TrainLoopOptions o4 = options("to4");
  o4.max_updates = 4;
  train(o4, data, {}, 0.0, 1);
  auto best = load_model((fs::path(o.model_dir) / "best").string());
  auto at4 = load_model(o4.model_dir);
  const auto pb = best->named_parameters(), p4 = at4->named_parameters();
  for (size_t k = 0; k < pb.size(); ++k) {
    EXPECT_TRUE(testing::bitwise_equal(*pb[k].second, *p4[k].second)) << pb[k].first;
  }
}

TEST_F(TrainLoopTest, LinearScheduleDecaysToTheUpdateBudget) {
  const auto data = toy_corpus(12, 24, 1);
  TrainLoopOptions o = options("linear");
  o.schedule.kind = ScheduleKind::linear;
  o.max_updates = 40;  // warm-up 20, then 20 steps down to lr / 21 at update 40
  o.log_every = 20;
  train(o, data, {}, 0.0, 1);
  std::ifstream in(dir_ / "log.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("update 20 |"), std::string::npos) << text;
  EXPECT_NE(text.find("lr 3.000e-03"), std::string::npos) << text;  // the peak, at update 20
  EXPECT_NE(text.find("lr 1.429e-04"), std::string::npos) << text;  // 3e-3 / 21, at update 40
}

TEST_F(TrainLoopTest, BadOptionsAreErrors) {
  const auto data = toy_corpus(5, 24, 6);
  Transformer model(toy_config(24, 0.0), 1);
  TrainLog log("");
  TrainLoopOptions o = options("m");
  o.metric = ValidMetric::bleu;
  EXPECT_TFM_ERROR(TrainLoop(o, model, batcher(data), {}, log), "needs validation BLEU");
  o = options("m");
  o.early_stopping = 2;
  EXPECT_TFM_ERROR(TrainLoop(o, model, batcher(data), {}, log), "needs a validation set");
  o = options("m");
  o.label_smoothing = 1.0;
  EXPECT_TFM_ERROR(TrainLoop(o, model, batcher(data), {}, log), "label_smoothing");
  o = options("m");
  EXPECT_TFM_ERROR(TrainLoop(o, model, batcher({}), {}, log), "no training examples");
  o = options("m");
  o.schedule.kind = ScheduleKind::linear;  // neither max_updates nor max_minutes
  EXPECT_TFM_ERROR(TrainLoop(o, model, batcher(data), {}, log),
                   "needs a budget of updates or of time");
}

}  // namespace
}  // namespace tfm
