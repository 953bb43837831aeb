// tfm vocab --input FILE... --size N --out PREFIX: trains a SentencePiece vocabulary (joint
// when several inputs are given) with tfm's fixed special ids pad 0, bos 1, eos 2, unk 3, and
// writes PREFIX.model and PREFIX.vocab.
#include <CLI/CLI.hpp>

#include <iostream>

#include "tfm/cli/commands.h"
#include "tfm/core/parallel.h"
#include "tfm/data/vocab_trainer.h"
#include "tfm/output_path.h"

namespace tfm::cli {

void add_vocab(CLI::App& app) {
  auto* cmd = app.add_subcommand("vocab", "Train a SentencePiece vocabulary");
  static VocabTrainerOptions o;
  cmd->add_option("-i,--input", o.inputs, "Text file(s), one sentence a line; several: joint vocab")
      ->required();
  cmd->add_option("--size", o.size, "Pieces in the vocabulary, the 4 specials included")
      ->required();
  cmd->add_option("-o,--out", o.out_prefix, "Output prefix: writes PREFIX.model and PREFIX.vocab")
      ->required();
  cmd->add_option("--model-type", o.model_type, "unigram or bpe")
      ->check(CLI::IsMember({"unigram", "bpe"}))
      ->capture_default_str();
  cmd->add_option("--character-coverage", o.character_coverage,
                  "Share of characters covered (0.9995 suits CJK)")
      ->capture_default_str();
  cmd->add_flag("--byte-fallback", o.byte_fallback,
                "Unknown characters become byte pieces instead of <unk> (adds 256 pieces)");
  cmd->add_option("--max-sentences", o.max_sentences,
                  "Train on a seeded random sample of this many sentences (0: all)")
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed for the sample and SentencePiece")->capture_default_str();
  cmd->add_option("--threads", o.threads, "Trainer threads (0: SentencePiece's default)");
  cmd->add_flag("--verbose", o.verbose, "Show SentencePiece's training log on stderr");
  cmd->callback([] {
    check_thread_count("--threads", o.threads);
    for (const char* ext : {".model", ".vocab"})
      check_output_path(o.out_prefix + ext,
                        {.kind = OutputKind::file, .name = "vocab: --out", .inputs = o.inputs});
    const VocabTrainerResult r = train_vocab(o);
    std::cout << "wrote " << r.model_path << " and " << r.vocab_path << " (" << o.size
              << " pieces, " << o.model_type << ") from " << r.sentences << " sentences";
    if (r.trained_on < r.sentences) std::cout << " (a sample of " << r.trained_on << ")";
    if (r.utf8_repaired_lines > 0) {
      std::cout << "; repaired invalid UTF-8 in " << r.utf8_repaired_lines << " lines";
    }
    std::cout << "\n";
  });
}

}  // namespace tfm::cli
