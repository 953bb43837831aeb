// Text <-> ids through SentencePiece (tfm's own vocabularies: `tfm vocab`, `tfm train`), or plain
// id lines (`--ids`). Vocab is the Tokenizer of a model directory that tfm trained.
#pragma once

#include <memory>
#include <string>

#include "tfm/data/batch.h"
#include "tfm/data/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace tfm {

class Vocab : public Tokenizer {
 public:
  explicit Vocab(const std::string& model_path);  // a SentencePiece .model/.spm file
  ~Vocab() override;
  Ids encode(const std::string& text) const override;
  std::string decode(const Ids& ids) const override;
  // Pieces as SentencePiece writes them ("▁Hund"): text -> pieces, pieces <-> ids. A piece not
  // in the vocabulary is the unknown id; an id outside it is an error.
  std::vector<std::string> encode_pieces(const std::string& text) const override;
  Ids pieces_to_ids(const std::vector<std::string>& pieces) const override;
  std::vector<std::string> ids_to_pieces(const Ids& ids) const override;
  int64_t size() const override;
  // SentencePiece's special ids (-1 when the model has no such piece).
  int64_t pad_id() const;
  int64_t bos_id() const;
  int64_t eos_id() const;
  TokenizerSpecials special_ids() const override;
  const std::string& path() const override { return path_; }
  std::string family() const override { return "sentencepiece"; }
  std::string describe() const override;

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string path_;
};

// The vocabulary files of a model directory: one shared SentencePiece model, or one per side.
// `tfm vocab --out PREFIX` writes PREFIX.model; `tfm train` copies it in under these names.
inline constexpr const char* kSharedVocabFile = "vocab.model";
inline constexpr const char* kSrcVocabFile = "vocab.src.model";
inline constexpr const char* kTrgVocabFile = "vocab.trg.model";
// What tfm train wrote before the names above (still read): vocab.spm, vocab.src.spm, ….
std::string legacy_vocab_file(const std::string& name);

// The SentencePiece vocabularies of a model directory: vocab.model (shared) or vocab.src.model +
// vocab.trg.model (or the legacy .spm names), as paths (both empty when the directory has none;
// equal for a shared vocabulary); a directory with one side's file but not the other's is an
// error that says so. data/tokenizer_files.h loads them (or a converted directory's tokenizer).
struct ModelVocabPaths {
  std::string src, trg;
};
ModelVocabPaths find_model_vocabs(const std::string& dir);

// "12 7 9" -> {12, 7, 9}; each id checked against [0, vocab_size). `where` names the line.
Ids parse_ids(const std::string& line, int64_t vocab_size, const std::string& where);

}  // namespace tfm
