// tfm prepare-ding [--input FILE] --out DIR [--valid N] [--test N] [--seed S]: turns the Ding
// German-English dictionary into DIR/{train,valid,test}.{de,en} (rules in data/ding.h) and
// reports every pair it kept or skipped.
#include <CLI/CLI.hpp>

#include <iostream>

#include "tfm/cli/commands.h"
#include "tfm/cli/io.h"
#include "tfm/core/check.h"
#include "tfm/core/validate.h"
#include "tfm/data/ding.h"

namespace tfm::cli {

void add_prepare_ding(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "prepare-ding", "Make a German-English corpus from the Ding dictionary (trans-de-en)");
  static std::string input = "/usr/share/trans/de-en", out;
  static DingSplitOptions o;
  cmd->add_option("-i,--input", input, "The Ding dictionary file")->capture_default_str();
  cmd->add_option("-o,--out", out, "Output directory: writes {train,valid,test}.{de,en}")
      ->required();
  cmd->add_option("--valid", o.valid, "Pairs in the validation split")->capture_default_str();
  cmd->add_option("--test", o.test, "Pairs in the test split")->capture_default_str();
  cmd->add_option("--sentence-share", o.sentence_share,
                  "Share of valid/test drawn from full sentences")
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of the split hash")->capture_default_str();
  cmd->callback([] {
    require_at_least("--valid", o.valid, 0);
    require_at_least("--test", o.test, 0);
    require_in_range("--sentence-share", o.sentence_share, 0.0, 1.0);
    check_split_outputs("prepare-ding: --out", out, {"de", "en"}, {input});
    DingStats stats;
    const std::vector<DingPair> pairs = read_ding(input, stats);
    // An empty corpus would only fail later, in tfm train, far from its cause.
    TFM_CHECK(!pairs.empty()) << "prepare-ding: " << input << " holds no usable dictionary pairs ("
                              << stats.summary() << "); is it the Ding trans-de-en file?";
    const DingSplit split = split_ding(pairs, o);
    TFM_CHECK(!split.train.empty())
        << "prepare-ding: no training pairs are left after the validation and test splits ("
        << pairs.size() << " pairs; lower --valid/--test)";
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
