// tfm::Trainer, the public training API, on a tiny model and a made-up corpus with a real
// SentencePiece vocabulary: callbacks tell what train.log says, request_stop() saves a state that
// resumes bit for bit, the directory is locked, and errors name the API's options.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tfm/core/file_util.h"
#include "tfm/data/vocab_trainer.h"
#include "tfm/trainer.h"
#include "tfm/translator.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

// Sentences over a small alphabet; the target is the source's words in reverse order.
void write_corpus(const fs::path& src, const fs::path& trg, int n, uint64_t seed) {
  static const char* words[] = {"ein",     "hund", "katze", "rot", "blau", "laeuft",
                                "springt", "der",  "die",   "das", "haus", "baum"};
  std::ofstream s(src), t(trg);
  uint64_t x = seed * 2654435761u + 1;
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> line;
    x = x * 6364136223846793005u + 1442695040888963407u;
    const int len = 2 + static_cast<int>((x >> 33) % 5);
    for (int k = 0; k < len; ++k) {
      x = x * 6364136223846793005u + 1442695040888963407u;
      line.push_back(words[(x >> 33) % 12]);
    }
    for (size_t k = 0; k < line.size(); ++k) s << (k ? " " : "") << line[k];
    for (size_t k = line.size(); k-- > 0;) t << line[k] << (k ? " " : "");
    s << "\n";
    t << "\n";
  }
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// What a Trainer built from `o` throws ("no error" when it builds).
std::string message(const TrainOptions& o) {
  try {
    Trainer t(o);
  } catch (const Error& e) {
    return e.message();
  }
  return std::string("no error");
}

// Trains `o` until request_stop() at update `at`; the result of that run (the directory is
// released on return).
TrainResult train_stopped_at(const TrainOptions& o, int64_t at) {
  Trainer* self = nullptr;
  TrainCallbacks cb;
  cb.on_update = [&](const TrainUpdateEvent& e) {
    if (e.update == at) self->request_stop();
  };
  Trainer t(o, cb);
  self = &t;
  return t.train();
}

class TrainerApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("tfm_trainer_api_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    write_corpus(root_ / "train.src", root_ / "train.trg", 300, 1);
    write_corpus(root_ / "valid.src", root_ / "valid.trg", 20, 2);
    VocabTrainerOptions v;
    v.inputs = {(root_ / "train.src").string(), (root_ / "train.trg").string()};
    v.size = 32;
    v.out_prefix = (root_ / "joint").string();
    train_vocab(v);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static TrainOptions options(const std::string& name, int64_t max_updates) {
    TrainOptions o;
    o.model_dir = (root_ / name).string();
    o.train_src = (root_ / "train.src").string();
    o.train_trg = (root_ / "train.trg").string();
    o.valid_src = (root_ / "valid.src").string();
    o.valid_trg = (root_ / "valid.trg").string();
    o.vocab = (root_ / "joint.model").string();
    o.preset = "tiny";
    o.batch_tokens = 200;
    o.max_updates = max_updates;
    o.warmup = 4;
    o.lr = 3e-3;
    o.valid_every = 4;
    o.save_every = 4;
    o.log_every = 2;
    o.threads = 1;
    return o;
  }

  static inline fs::path root_;
};

TEST_F(TrainerApi, CallbacksSayWhatTheLogSays) {
  std::vector<std::string> logged;
  std::vector<TrainUpdateEvent> updates;
  std::vector<TrainStatsEvent> stats;
  std::vector<TrainValidationEvent> valids;
  std::vector<int64_t> checkpoints;
  TrainCallbacks cb;
  cb.on_log = [&](const std::string& s) { logged.push_back(s); };
  cb.on_update = [&](const TrainUpdateEvent& e) { updates.push_back(e); };
  cb.on_stats = [&](const TrainStatsEvent& e) { stats.push_back(e); };
  cb.on_validation = [&](const TrainValidationEvent& e) { valids.push_back(e); };
  cb.on_checkpoint = [&](int64_t u, const std::string&) { checkpoints.push_back(u); };
  Trainer t(options("cb", 8), cb);
  EXPECT_FALSE(t.resuming());
  EXPECT_EQ(t.options().metric, "ppl");
  EXPECT_EQ(t.model_info().src_vocab_size, 32);
  const TrainResult r = t.train();

  EXPECT_EQ(r.updates, 8);
  EXPECT_EQ(r.stop_reason, "max updates");
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(logged, lines_of(root_ / "cb" / "train.log"));
  ASSERT_EQ(updates.size(), 8u);
  for (size_t i = 0; i < updates.size(); ++i) {
    EXPECT_EQ(updates[i].update, static_cast<int64_t>(i + 1));
    EXPECT_DOUBLE_EQ(updates[i].fraction_done, static_cast<double>(i + 1) / 8);
    EXPECT_GT(updates[i].loss, 0);
  }
  // Each stats event is the window the log line just before it printed.
  ASSERT_EQ(stats.size(), 4u);
  for (const auto& e : stats) {
    EXPECT_EQ(e.update % 2, 0);
    char want[64];
    std::snprintf(want, sizeof want, "| update %lld | ", static_cast<long long>(e.update));
    char loss[64];
    std::snprintf(loss, sizeof loss, "| loss %.4f |", e.loss);
    bool found = false;
    for (const auto& l : logged)
      found |= l.rfind("epoch", 0) == 0 && l.find(want) != std::string::npos &&
               l.find(loss) != std::string::npos;
    EXPECT_TRUE(found) << "no log line with " << want << loss;
  }
  // Validations at 4 and 8; the log's ppl is the event's.
  ASSERT_EQ(valids.size(), 2u);
  EXPECT_EQ(valids[0].update, 4);
  EXPECT_TRUE(valids[0].improved);
  EXPECT_LT(valids[0].bleu, 0);  // no valid_bleu
  for (const auto& v : valids) {
    char ppl[64];
    std::snprintf(ppl, sizeof ppl, "| ppl %.3f |", v.perplexity);
    bool found = false;
    for (const auto& l : logged)
      found |= l.rfind("valid", 0) == 0 && l.find(ppl) != std::string::npos;
    EXPECT_TRUE(found) << "no valid line with " << ppl;
  }
  EXPECT_EQ(r.best_update, valids[0].improved && !valids[1].improved ? 4 : 8);
  EXPECT_NEAR(r.last_valid_perplexity, valids[1].perplexity, 1e-12);
  EXPECT_EQ(checkpoints, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(r.best_dir, (root_ / "cb" / "best").string());
  EXPECT_TRUE(fs::exists(root_ / "cb" / "best" / "model.safetensors"));
  EXPECT_THROW(t.train(), Error);  // once per Trainer
}

TEST_F(TrainerApi, RequestStopSavesAStateThatResumesBitForBit) {
  Trainer(options("straight", 8)).train();

  const TrainResult r1 = train_stopped_at(options("stopped", 8), 3);
  EXPECT_TRUE(r1.interrupted);
  EXPECT_EQ(r1.stop_reason, "interrupted");
  EXPECT_EQ(r1.updates, 3);

  Trainer second(options("stopped", 8));
  EXPECT_TRUE(second.resuming());
  const TrainResult r2 = second.train();
  EXPECT_EQ(r2.updates, 8);
  EXPECT_EQ(read_file((root_ / "stopped" / "model.safetensors").string()),
            read_file((root_ / "straight" / "model.safetensors").string()))
      << "stopped at 3 and resumed: weights differ from the straight run";
}

TEST_F(TrainerApi, OneTrainerADirectory) {
  Trainer a(options("locked", 2));
  try {
    Trainer b(options("locked", 2));
    FAIL() << "a second Trainer on a locked directory";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("in use by another user in this process"), std::string::npos)
        << e.message();
  }
}

TEST_F(TrainerApi, ErrorsNameTheApiOptions) {
  TrainOptions o = options("bad", 2);
  o.train_trg.clear();
  std::string m = message(o);
  EXPECT_NE(m.find("train_src and train_trg go together"), std::string::npos) << m;
  EXPECT_EQ(m.find("--"), std::string::npos) << m;

  o = options("bad", 2);
  o.max_updates = -1;
  m = message(o);
  EXPECT_NE(m.find("max_updates"), std::string::npos) << m;

  o = options("bad", 2);
  o.compute_type = ComputeType::int8;
  m = message(o);
  EXPECT_NE(m.find("compute_type int8"), std::string::npos) << m;

  o = options("bad", 2);
  o.metric = "bleu";
  m = message(o);
  EXPECT_NE(m.find("metric bleu needs valid_bleu"), std::string::npos) << m;
  EXPECT_FALSE(fs::exists(root_ / "bad")) << "a bad option touched the directory";
}

// A decoder-only model (a language model) trained on target sentences alone: it learns two
// sentences well enough to continue each from its first word, its validation perplexity is what
// the Translator's score_batch gives the same sentences, and a stopped run resumes bit for bit.
TEST_F(TrainerApi, DecoderOnlyLearnsItsSentencesAndValidatesAsScoreBatchDoes) {
  const std::vector<std::string> sentences = {"ein hund laeuft der baum",
                                              "die katze springt das haus blau"};
  {
    std::ofstream lm(root_ / "lm.txt");
    for (int i = 0; i < 60; ++i) lm << sentences[i % 2] << "\n" << (i % 7 == 0 ? "\n" : "");
  }
  const auto lm_options = [&](const std::string& name, int64_t updates) {
    TrainOptions o = options(name, updates);
    o.decoder_only = true;
    o.train_src.clear();
    o.valid_src.clear();
    o.train_trg = (root_ / "lm.txt").string();
    o.valid_trg = (root_ / "valid.trg").string();  // other sentences: a finite perplexity
    o.valid_every = updates;
    o.save_every = 0;
    return o;
  };
  const TrainResult r = Trainer(lm_options("lm", 300)).train();
  ASSERT_EQ(r.updates, 300);
  ASSERT_GT(r.last_valid_perplexity, 1.0);

  const Translator t((root_ / "lm").string());
  EXPECT_TRUE(t.model_info().decoder_only);
  EXPECT_EQ(t.model_info().encoder_layers, 0);
  for (const std::string& s : sentences) {
    const std::string first = s.substr(0, s.find(' '));
    const auto got = t.generate_batch(std::vector<std::string>{first});
    EXPECT_EQ(got.at(0).hypotheses.at(0).text, s) << "continuing '" << first << "'";
  }
  // Validation's loss (the training forward, dropout off) against inference's scores.
  const std::vector<std::string> valid = lines_of(root_ / "valid.trg");
  const std::vector<double> lp = t.score_batch(std::vector<std::string>{}, valid);
  double nll = 0, tokens = 0;
  for (size_t i = 0; i < valid.size(); ++i) {
    nll -= lp[i];
    tokens += static_cast<double>(t.tokenize_target(valid[i]).size() + 1);
  }
  EXPECT_NEAR(r.last_valid_perplexity, std::exp(nll / tokens), 1e-4 * r.last_valid_perplexity);

  Trainer(lm_options("lm_straight", 10)).train();
  EXPECT_EQ(train_stopped_at(lm_options("lm_stopped", 10), 4).updates, 4);
  Trainer(lm_options("lm_stopped", 10)).train();
  EXPECT_EQ(read_file((root_ / "lm_stopped" / "model.safetensors").string()),
            read_file((root_ / "lm_straight" / "model.safetensors").string()))
      << "stopped at 4 and resumed: weights differ from the straight run";

  TrainOptions o = lm_options("lm_bad", 2);
  o.train_src = (root_ / "train.src").string();
  EXPECT_NE(message(o).find("a decoder-only model trains on train_trg alone"), std::string::npos)
      << message(o);
  o = lm_options("lm_bad", 2);
  o.valid_bleu = true;
  EXPECT_NE(message(o).find("has no sources to translate"), std::string::npos) << message(o);
  o = lm_options("lm_bad", 2);
  o.vocab.clear();
  o.vocab_trg = (root_ / "joint.model").string();
  EXPECT_NE(message(o).find("takes one vocabulary, vocab"), std::string::npos) << message(o);
}

TEST_F(TrainerApi, ACallbackThatThrowsEndsTrainWithItsException) {
  TrainCallbacks cb;
  cb.on_update = [](const TrainUpdateEvent& e) {
    if (e.update == 2) throw std::runtime_error("from the callback");
  };
  Trainer t(options("throws", 8), cb);
  EXPECT_THROW(t.train(), std::runtime_error);
}

}  // namespace
}  // namespace tfm
