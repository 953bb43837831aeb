// Training a SentencePiece vocabulary (`tfm vocab`) through libsentencepiece's trainer.
//
// The special ids are fixed so that every vocabulary tfm trains matches ModelConfig's defaults:
//   pad 0 "<pad>", bos 1 "<s>", eos 2 "</s>", unk 3 "<unk>".
// Several inputs make one joint vocabulary (e.g. source and target sides for shared
// embeddings). Inputs are streamed to the trainer line by line through tfm's own reader, so
// file names may hold any character, CRLF line ends are stripped, invalid UTF-8 is repaired to
// U+FFFD (counted) and empty lines are skipped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tfm {

inline constexpr int kVocabPadId = 0, kVocabBosId = 1, kVocabEosId = 2, kVocabUnkId = 3;

struct VocabTrainerOptions {
  std::vector<std::string> inputs;     // plain-text files, one sentence a line
  int64_t size = 8000;                 // pieces in the vocabulary, specials included
  std::string out_prefix;              // writes out_prefix.model and out_prefix.vocab
  std::string model_type = "unigram";  // unigram | bpe
  // Share of characters the vocabulary must cover. 1.0 (every character seen) suits alphabetic
  // languages such as German and English; SentencePiece suggests 0.9995 for CJK.
  double character_coverage = 1.0;
  bool byte_fallback = false;  // unknown characters become UTF-8 byte pieces instead of <unk>
  // Train on at most this many sentences, a seeded random sample of all of them; 0: all.
  int64_t max_sentences = 0;
  uint64_t seed = 0;     // the sample and SentencePiece's own randomness
  int threads = 0;       // trainer threads; 0: SentencePiece's default
  bool verbose = false;  // SentencePiece's progress log on stderr
};

struct VocabTrainerResult {
  std::string model_path, vocab_path;
  int64_t sentences = 0;            // non-empty lines read from the inputs
  int64_t trained_on = 0;           // of those, the ones the trainer saw (max_sentences)
  int64_t utf8_repaired_lines = 0;  // of those, lines whose invalid UTF-8 was replaced
};

// Trains and writes the model. Errors (a missing input, no sentences, a size the data cannot
// fill, a bad option) throw tfm::Error with SentencePiece's own message wrapped in context.
VocabTrainerResult train_vocab(const VocabTrainerOptions& options);

}  // namespace tfm
