// encode_enough (runtime/encode_prefix.h): a long text's beginning encoded instead of the whole,
// its first ids those of the whole text, against SentencePiece on the whole text (unigram and
// BPE vocabularies trained here); the bytes it hands the encoder bounded by what the model
// reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "support/test_util.h"
#include "tfm/data/vocab.h"
#include "tfm/data/vocab_trainer.h"
#include "tfm/runtime/encode_prefix.h"

namespace tfm::runtime {
namespace {

const char* kWords[] = {"der",
                        "hund",
                        "läuft",
                        "über",
                        "die",
                        "straße",
                        "und",
                        "sieht",
                        "eine",
                        "katze",
                        "im",
                        "garten",
                        "unabhängigkeitserklärung",
                        "x",
                        "zwölf"};

std::string random_text(std::mt19937& rng, size_t bytes, bool spaces) {
  std::string out;
  std::uniform_int_distribution<size_t> word(0, std::size(kWords) - 1);
  while (out.size() < bytes) {
    if (spaces && !out.empty()) out += rng() % 7 == 0 ? "  " : " ";
    out += kWords[word(rng)];
  }
  return out;
}

std::unique_ptr<Vocab> trained(const std::string& type) {
  const auto dir = std::filesystem::temp_directory_path() / ("tfm_encode_prefix_" + type);
  std::filesystem::create_directories(dir);
  std::mt19937 rng(1);
  {
    std::ofstream f(dir / "corpus.txt");
    for (int i = 0; i < 300; ++i) f << random_text(rng, 60, true) << "\n";
  }
  VocabTrainerOptions o;
  o.inputs = {(dir / "corpus.txt").string()};
  o.size = 40;
  o.model_type = type;
  o.out_prefix = (dir / "v").string();
  train_vocab(o);
  return std::make_unique<Vocab>(o.out_prefix + ".model");
}

TEST(EncodePrefix, TheFirstIdsAreThoseOfTheWholeText) {
  for (const std::string type : {"unigram", "bpe"}) {
    const auto vocab = trained(type);
    std::mt19937 rng(7);
    for (const size_t enough : {size_t{5}, size_t{100}, size_t{257}}) {
      for (const bool spaces : {true, false}) {
        const std::string text = random_text(rng, 200'000, spaces);
        size_t longest = 0;
        const auto encode = [&](const std::string& t) {
          longest = std::max(longest, t.size());
          return vocab->encode(t);
        };
        bool cut = false;
        const Ids got = encode_enough(text, enough, encode, &cut);
        const Ids whole = vocab->encode(text);
        ASSERT_TRUE(cut) << type;
        ASSERT_GT(got.size(), enough) << type;
        EXPECT_TRUE(
            std::equal(got.begin(), got.begin() + static_cast<ptrdiff_t>(enough), whole.begin()))
            << type << " enough " << enough << " spaces " << spaces;
        // What was encoded is bounded by the model's reach, not the text's length.
        EXPECT_LE(longest, std::max<size_t>(64 * 1024, enough * kMaxBytesPerId) + 1024) << type;
      }
    }
    // A short text, or no bound: the whole text, not cut.
    bool cut = true;
    const std::string shortish = random_text(rng, 3000, true);
    EXPECT_EQ(encode_enough(
                  shortish, 257, [&](const std::string& t) { return vocab->encode(t); }, &cut),
              vocab->encode(shortish));
    EXPECT_FALSE(cut);
    const std::string text = random_text(rng, 100'000, true);
    EXPECT_EQ(encode_enough(
                  text, SIZE_MAX, [&](const std::string& t) { return vocab->encode(t); }, &cut),
              vocab->encode(text));
    EXPECT_FALSE(cut);
  }
}

TEST(EncodePrefix, AFewIdsOfAVeryLongTextStopAtTheByteCap) {
  // One id per 10 000 bytes (an unknown run SentencePiece would merge): the cap ends it, cut.
  const std::string text(1 << 20, 'a');
  size_t longest = 0;
  const auto encode = [&](const std::string& t) {
    longest = std::max(longest, t.size());
    return Ids(t.size() / 10000, 5);
  };
  bool cut = false;
  const Ids ids = encode_enough(text, 100, encode, &cut);
  EXPECT_TRUE(cut);
  EXPECT_LE(ids.size(), 100u);
  EXPECT_LE(longest, std::max<size_t>(64 * 1024, 100 * kMaxBytesPerId) + 1024);
}

}  // namespace
}  // namespace tfm::runtime
