// tfm prepare-ding [--input FILE] --out DIR [--valid N] [--test N] [--seed S]: turns the Ding
// German-English dictionary into DIR/{train,valid,test}.{de,en} (rules in data/ding.h) and
// reports every pair it kept or skipped.
#include <CLI/CLI.hpp>

#include <iostream>

#include "tfm/cli/commands.h"
#include "tfm/data/ding.h"

namespace tfm::cli {

void add_prepare_ding(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "prepare-ding", "Make a German-English corpus from the Ding dictionary (trans-de-en)");
  static std::string input = "/usr/share/trans/de-en", out;
  static DingSplitOptions o;
  cmd->add_option("--input", input, "The Ding dictionary file")->capture_default_str();
  cmd->add_option("--out", out, "Output directory: writes {train,valid,test}.{de,en}")->required();
  cmd->add_option("--valid", o.valid, "Pairs in the validation split")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--test", o.test, "Pairs in the test split")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--sentence-share", o.sentence_share,
                  "Share of valid/test drawn from full sentences")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of the split hash")->capture_default_str();
  cmd->callback([] {
    DingStats stats;
    const std::vector<DingPair> pairs = read_ding(input, stats);
    const DingSplit split = split_ding(pairs, o);
    write_ding_split(split, out);
    std::cout << input << ": " << stats.summary() << "\n"
              << "split (seed " << o.seed << "): train " << split.train.size() << ", valid "
              << split.valid.size() << " (" << split.valid_sentences << " sentences), test "
              << split.test.size() << " (" << split.test_sentences << " sentences); "
              << split.held_out_extra_dropped
              << " extra translations of held-out German texts dropped\n"
              << "wrote " << out << "/{train,valid,test}.{de,en}\n";
  });
}

}  // namespace tfm::cli
