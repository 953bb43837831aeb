#include "tfm/data/vocab_trainer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "tfm/core/check.h"
#include "tfm/core/file_util.h"
#include "tfm/core/rng.h"
#include "tfm/data/corpus.h"

namespace tfm {

namespace {

// Whether a line holds anything but whitespace (ASCII, and the Unicode spaces SentencePiece's
// normaliser turns into spaces and strips). A line of spaces alone is empty to the trainer, and
// inputs of nothing else made it abort inside SentencePiece instead of failing with an error.
bool has_text(std::string_view line) {
  // The multi-byte spaces, as UTF-8: U+0085, U+00A0, U+1680, U+2000..U+200B, U+2028, U+2029,
  // U+202F, U+205F, U+3000, U+FEFF.
  static constexpr std::string_view spaces[] = {
      "\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81",
      "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86",
      "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\x8B",
      "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80",
      "\xEF\xBB\xBF"};
  for (size_t i = 0; i < line.size();) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c == ' ' || (c >= '\t' && c <= '\r')) {
      ++i;
      continue;
    }
    const std::string_view rest = line.substr(i);
    const auto space = std::find_if(std::begin(spaces), std::end(spaces),
                                    [&](std::string_view sp) { return rest.starts_with(sp); });
    if (space == std::end(spaces)) return true;
    i += space->size();
  }
  return false;
}

// Feeds the trainer every line of the inputs with text, in order, one line in memory at a time.
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(const std::vector<std::string>& paths) : paths_(paths) { Next(); }
  bool done() const override { return done_; }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override { return {}; }
  void Next() override {
    for (;;) {
      if (!in_.is_open()) {
        if (file_ == paths_.size()) {
          done_ = true;
          return;
        }
        in_.open(paths_[file_], std::ios::binary);
        TFM_CHECK(in_) << "vocab: cannot open input " << paths_[file_];
      }
      if (!std::getline(in_, raw_)) {
        in_.close();
        in_.clear();
        ++file_;
        continue;
      }
      if (!raw_.empty() && raw_.back() == '\r') raw_.pop_back();
      if (!has_text(raw_)) continue;
      int64_t replaced = 0;
      value_ = repair_utf8(raw_, &replaced);
      if (replaced > 0) ++repaired_;
      ++sentences_;
      return;
    }
  }
  int64_t sentences() const { return sentences_; }
  int64_t repaired() const { return repaired_; }

 private:
  const std::vector<std::string>& paths_;
  size_t file_ = 0;
  std::ifstream in_;
  std::string raw_, value_;
  bool done_ = false;
  int64_t sentences_ = 0, repaired_ = 0;
};

// Feeds the trainer a sample held in memory.
class VectorIterator : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(const std::vector<std::string>& lines) : lines_(lines) {}
  bool done() const override { return i_ >= lines_.size(); }
  const std::string& value() const override { return lines_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }
  void Next() override { ++i_; }

 private:
  const std::vector<std::string>& lines_;
  size_t i_ = 0;
};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

VocabTrainerResult train_vocab(const VocabTrainerOptions& o) {
  namespace fs = std::filesystem;
  TFM_CHECK(!o.inputs.empty()) << "vocab: no input files";
  for (const auto& path : o.inputs) {
    // Not is_regular_file: a pipe or <(...) is read once, which is all training needs.
    TFM_CHECK(fs::exists(path)) << "vocab: input " << path << " does not exist";
    TFM_CHECK(!fs::is_directory(path)) << "vocab: input " << path << " is a directory";
  }
  TFM_CHECK(!o.out_prefix.empty()) << "vocab: no output prefix";
  // The four specials take ids 0-3; SentencePiece needs at least one real piece beyond them.
  TFM_CHECK(o.size > 4) << "vocab: --size " << o.size
                        << " is too small: the four special pieces alone take 4";
  TFM_CHECK(o.model_type == "unigram" || o.model_type == "bpe")
      << "vocab: --model-type must be unigram or bpe, got " << o.model_type;
  TFM_CHECK(o.character_coverage > 0 && o.character_coverage <= 1)
      << "vocab: --character-coverage must be in (0, 1], got " << o.character_coverage;
  TFM_CHECK(o.max_sentences >= 0) << "vocab: --max-sentences must be >= 0";
  TFM_CHECK(o.out_prefix.back() != '/' && !fs::is_directory(o.out_prefix))
      << "vocab: --out " << o.out_prefix << " is a directory; give a prefix such as "
      << o.out_prefix << (o.out_prefix.back() == '/' ? "" : "/") << "vocab";
  const fs::path parent = fs::path(o.out_prefix).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    TFM_CHECK(!ec) << "vocab: cannot create " << parent.string() << ": " << ec.message();
  }

  std::unordered_map<std::string, std::string> args = {
      // No model_prefix: the model comes back in memory (see below), which it must then be.
      {"vocab_size", std::to_string(o.size)},
      {"model_type", o.model_type},
      {"character_coverage", std::to_string(o.character_coverage)},
      {"byte_fallback", o.byte_fallback ? "true" : "false"},
      {"pad_id", std::to_string(kVocabPadId)},
      {"bos_id", std::to_string(kVocabBosId)},
      {"eos_id", std::to_string(kVocabEosId)},
      {"unk_id", std::to_string(kVocabUnkId)},
      // The trainer gets exactly the sentences it should learn from (tfm samples them below).
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"minloglevel", o.verbose ? "0" : "1"},
  };
  if (o.threads > 0) args["num_threads"] = std::to_string(o.threads);
  sentencepiece::SetRandomGeneratorSeed(static_cast<unsigned int>(o.seed));

  LineIterator lines(o.inputs);
  TFM_CHECK(!lines.done()) << "vocab: the inputs (" << joined(o.inputs)
                           << ") hold no non-empty lines (only empty or whitespace lines)";
  sentencepiece::util::Status status;
  // SentencePiece's own file writing ignores write errors (a full disk left a truncated .model and
  // an empty .vocab behind a success message): it hands back the model instead, and tfm writes
  // both files atomically and checked.
  std::string model_proto;
  int64_t trained_on = 0;
  if (o.max_sentences > 0) {
    // SentencePiece's own sampling ignores SetRandomGeneratorSeed in Debian's build (measured:
    // seeds 5 and 6 gave the same vocabulary), so tfm samples: reservoir sampling (Algorithm R)
    // driven by Philox, the same sample for the same seed and inputs on every machine.
    const RandomStream stream(o.seed, 0);
    const auto k = static_cast<size_t>(o.max_sentences);
    std::vector<std::string> sample;
    for (uint64_t t = 0; !lines.done(); lines.Next(), ++t) {
      if (sample.size() < k) {
        sample.push_back(lines.value());
        continue;
      }
      const auto b = stream.block(t);
      const uint64_t j = ((static_cast<uint64_t>(b[0]) << 32) | b[1]) % (t + 1);
      if (j < k) sample[j] = lines.value();
    }
    trained_on = static_cast<int64_t>(sample.size());
    VectorIterator it(sample);
    status = sentencepiece::SentencePieceTrainer::Train(args, &it, &model_proto);
  } else {
    status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &model_proto);
    trained_on = lines.sentences();
  }
  TFM_CHECK(status.ok()) << "vocab: SentencePiece training failed (" << o.model_type << ", --size "
                         << o.size << ", inputs " << joined(o.inputs) << "): " << status.ToString();

  VocabTrainerResult r;
  r.model_path = o.out_prefix + ".model";
  r.vocab_path = o.out_prefix + ".vocab";
  r.sentences = lines.sentences();
  r.trained_on = trained_on;
  r.utf8_repaired_lines = lines.repaired();
  sentencepiece::SentencePieceProcessor sp;
  const auto loaded = sp.LoadFromSerializedProto(model_proto);
  TFM_CHECK(loaded.ok()) << "vocab: SentencePiece returned an unreadable model: "
                         << loaded.ToString();
  // The .vocab as SentencePiece writes it: piece, tab, score, one a line.
  std::ostringstream vocab;
  for (int i = 0; i < sp.GetPieceSize(); ++i)
    vocab << sp.IdToPiece(i) << "\t" << sp.GetScore(i) << "\n";
  // Both written in full before either is renamed into place: a full disk fails while writing,
  // before anything of the old pair is replaced.
  AtomicFileWriter vocab_file(r.vocab_path), model_file(r.model_path);
  vocab_file.write(vocab.str());
  model_file.write(model_proto);
  vocab_file.commit();
  model_file.commit();
  return r;
}

}  // namespace tfm
