#include "tfm/data/vocab_trainer.h"

#include <gtest/gtest.h>
#include <sentencepiece_processor.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "support/test_util.h"
#include "tfm/data/vocab.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

class VocabTrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tfm_vocab_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A small synthetic corpus: sentences of words built from a few syllables, so subwords
  // exist to be learnt. Deterministic from seed.
  std::string corpus(const std::string& name, int lines, uint32_t seed,
                     const std::vector<std::string>& syllables) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<size_t> syl(0, syllables.size() - 1);
    std::uniform_int_distribution<int> words(3, 9), parts(1, 3);
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < lines; ++i) {
      const int nw = words(rng);
      for (int w = 0; w < nw; ++w) {
        if (w) out << ' ';
        const int np = parts(rng);
        for (int p = 0; p < np; ++p) out << syllables[syl(rng)];
      }
      out << (i % 3 == 0 ? "\r\n" : "\n");
      if (i % 50 == 0) out << "\n";  // empty lines are skipped
    }
    return path;
  }
  std::string german(int lines = 400, uint32_t seed = 1) {
    return corpus("de.txt", lines, seed,
                  {"haus", "ber", "ge", "ung", "schaft", "ein", "der", "die", "über", "grün",
                   "stra", "ße", "kind", "er", "lich", "wald", "en"});
  }
  std::string english(int lines = 400, uint32_t seed = 2) {
    return corpus("en.txt", lines, seed,
                  {"house", "the", "ing", "tion", "over", "green", "street", "child", "ren", "ly",
                   "forest", "s", "a", "play", "ed"});
  }
  VocabTrainerOptions options(std::vector<std::string> inputs, int64_t size,
                              const std::string& prefix = "spm") {
    VocabTrainerOptions o;
    o.inputs = std::move(inputs);
    o.size = size;
    o.out_prefix = (dir_ / prefix).string();
    o.threads = 1;
    return o;
  }
  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path dir_;
};

TEST_F(VocabTrainerTest, TrainsRoundTripsAndFixesSpecialIds) {
  const auto r = train_vocab(options({german()}, 120));
  EXPECT_TRUE(fs::is_regular_file(r.model_path));
  EXPECT_TRUE(fs::is_regular_file(r.vocab_path));
  EXPECT_EQ(r.sentences, 400);
  EXPECT_EQ(r.trained_on, 400);

  Vocab v(r.model_path);
  EXPECT_EQ(v.size(), 120);  // --size honoured exactly
  const std::string text = "das grüne haus der kinder über die straße";
  EXPECT_EQ(v.decode(v.encode(text)), text);

  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.Load(r.model_path).ok());
  EXPECT_EQ(sp.pad_id(), 0);
  EXPECT_EQ(sp.bos_id(), 1);
  EXPECT_EQ(sp.eos_id(), 2);
  EXPECT_EQ(sp.unk_id(), 3);
  EXPECT_EQ(sp.IdToPiece(0), "<pad>");
  EXPECT_EQ(sp.IdToPiece(3), "<unk>");
  // The ids the model and the trainer agree on.
  EXPECT_EQ(kVocabPadId, 0);
  EXPECT_EQ(kVocabBosId, 1);
  EXPECT_EQ(kVocabEosId, 2);
  // A character never seen maps to <unk> without byte fallback.
  const Ids unk = v.encode("Ж");
  EXPECT_NE(std::find(unk.begin(), unk.end(), 3), unk.end());
}

TEST_F(VocabTrainerTest, JointBpeVocabularyCoversBothInputs) {
  auto o = options({german(), english()}, 200);
  o.model_type = "bpe";
  const auto r = train_vocab(o);
  EXPECT_EQ(r.sentences, 800);
  Vocab v(r.model_path);
  EXPECT_EQ(v.size(), 200);
  for (const std::string s : {"grüne straße", "green streets", "forestry"}) {
    const Ids ids = v.encode(s);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), 3), 0) << s;  // no <unk>
    EXPECT_EQ(v.decode(ids), s);
  }
}

TEST_F(VocabTrainerTest, ByteFallbackAndRepairedInput) {
  // Byte fallback adds 256 byte pieces, so the vocabulary must be larger than that.
  const auto bad = corpus("bad.txt", 600, 3,
                          {"haus", "ber", "ge", "ung", "schaft", "ein", "der", "\xFF", "grün",
                           "stra", "ße", "kind", "er", "lich", "wald", "en"});
  auto o = options({bad}, 300);
  o.byte_fallback = true;
  const auto r = train_vocab(o);
  EXPECT_GT(r.utf8_repaired_lines, 0);
  Vocab v(r.model_path);
  const Ids ids = v.encode("Ж");  // unseen: two byte pieces, no <unk>
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 3), 0);
  EXPECT_EQ(v.decode(ids), "Ж");
}

TEST_F(VocabTrainerTest, DeterministicForASeed) {
  const auto de = german(600);
  auto a = options({de}, 150, "a"), b = options({de}, 150, "b"), c = options({de}, 150, "c");
  a.max_sentences = b.max_sentences = c.max_sentences = 300;  // a seeded sample
  a.seed = b.seed = 42;
  c.seed = 43;
  const auto ra = train_vocab(a);
  EXPECT_EQ(ra.sentences, 600);
  EXPECT_EQ(ra.trained_on, 300);
  train_vocab(b);
  train_vocab(c);
  EXPECT_NE(slurp((dir_ / "a.vocab").string()), slurp((dir_ / "c.vocab").string()))
      << "another seed, another sample: the vocabularies should differ";
  const std::string va = slurp((dir_ / "a.vocab").string());
  EXPECT_GT(va.size(), 0u);
  EXPECT_TRUE(va == slurp((dir_ / "b.vocab").string())) << "same seed, different vocabularies";
  // (The .model files differ: SentencePiece stores the output prefix in them.)
}

TEST_F(VocabTrainerTest, ClearErrors) {
  EXPECT_TFM_ERROR(train_vocab(options({(dir_ / "missing.txt").string()}, 100)),
                   "missing.txt does not exist");
  const auto de = german(50);
  EXPECT_TFM_ERROR(train_vocab(options({de}, 50000)), "--size 50000");
  EXPECT_TFM_ERROR(train_vocab(options({de}, 50000)), "SentencePiece training failed");
  EXPECT_TFM_ERROR(train_vocab(options({de}, 3)), "too small");
  auto o = options({de}, 100);
  o.model_type = "word2vec";
  EXPECT_TFM_ERROR(train_vocab(o), "unigram or bpe");
  const std::string empty = (dir_ / "empty.txt").string();
  std::ofstream(empty) << "\n\r\n";
  EXPECT_TFM_ERROR(train_vocab(options({empty}, 100)), "no non-empty lines");
  // Whitespace alone (ASCII, NBSP, the ideographic space, a BOM) is no text: SentencePiece
  // aborted the process on it (exit 255, no error).
  const std::string blank = (dir_ / "blank.txt").string();
  std::ofstream(blank) << "   \n\t \t\n\xC2\xA0 \xE3\x80\x80\n\xEF\xBB\xBF\xE2\x80\x83\n";
  EXPECT_TFM_ERROR(train_vocab(options({blank, empty}, 100)), "only empty or whitespace lines");
}

}  // namespace
}  // namespace tfm
