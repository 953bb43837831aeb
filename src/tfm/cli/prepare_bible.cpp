// tfm prepare-bible --src FILE --trg FILE --src-lang L --trg-lang L --out DIR: two SWORD Bible
// modules' IMP exports (`mod2imp MODULE > FILE`) to DIR/{train,valid,test}.{L,L,keys}, verses
// aligned by key and split by whole books (rules in data/bible_module.h, bible_align.h,
// bible_split.h), with a report of every verse kept or dropped.
#include <CLI/CLI.hpp>

#include <iostream>

#include "tfm/cli/commands.h"
#include "tfm/cli/io.h"
#include "tfm/data/bible_align.h"
#include "tfm/data/bible_module.h"
#include "tfm/data/bible_split.h"

namespace tfm::cli {

void add_prepare_bible(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "prepare-bible", "Make a parallel corpus from two SWORD Bible modules (mod2imp exports)");
  static std::string src, trg, src_lang, trg_lang, out;
  static BibleSplitOptions split_options;
  static bool no_numbering_check = false;
  cmd->add_option("--src", src, "IMP export of the source-language module (mod2imp MODULE)")
      ->required();
  cmd->add_option("--trg", trg, "IMP export of the target-language module")->required();
  cmd->add_option("--src-lang", src_lang, "Source language: the files' suffix (e.g. es)")
      ->required();
  cmd->add_option("--trg-lang", trg_lang, "Target language: the files' suffix (e.g. en)")
      ->required();
  cmd->add_option("--out", out, "Output directory: writes {train,valid,test}.{SRC,TRG,keys}")
      ->required();
  cmd->add_option("--test-books", split_options.test_books,
                  "Books held out for test, comma-separated, as the modules' keys name them")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--valid-books", split_options.valid_books, "Books held out for validation")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_flag("--no-numbering-check", no_numbering_check,
                "Keep every pair with the same key, even where the texts number a chapter's "
                "verses differently");
  cmd->callback([] {
    check_split_outputs("prepare-bible: --out", out, {src_lang, trg_lang, "keys"}, {src, trg});
    const BibleModule s = read_bible_module(src);
    const BibleModule t = read_bible_module(trg);
    BibleAlignStats stats;
    const std::vector<BiblePair> pairs =
        align_bibles(s, t, BibleAlignOptions{.check_numbering = !no_numbering_check}, stats);
    const BibleSplit split = split_bible_by_books(pairs, split_options);
    write_bible_split(split, out, src_lang, trg_lang);
    std::cout << src << ": " << s.stats.summary() << "\n"
              << trg << ": " << t.stats.summary() << "\n"
              << stats.summary() << "\n"
              << "split by books: train " << split.train.size() << ", valid " << split.valid.size()
              << ", test " << split.test.size() << "\n"
              << "wrote " << out << "/{train,valid,test}.{" << src_lang << "," << trg_lang
              << ",keys}\n";
  });
}

}  // namespace tfm::cli
