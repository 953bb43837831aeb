// tfm eval --ref FILE [--ref FILE...] --hyp FILE [--metrics bleu,chrf]: corpus BLEU and chrF as
// sacreBLEU 2.x computes them by default, one line per metric, then one signature line each.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "tfm/cli/commands.h"
#include "tfm/cli/io.h"
#include "tfm/core/check.h"
#include "tfm/core/output_file.h"
#include "tfm/eval/bleu.h"
#include "tfm/eval/chrf.h"
#include "tfm/output_path.h"

namespace tfm::cli {

void add_eval(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "Corpus BLEU and chrF (sacreBLEU-compatible) of a file");
  static std::vector<std::string> ref_paths;
  static std::string hyp_path;
  static std::vector<std::string> metrics{"bleu", "chrf"};
  cmd->add_option("--ref", ref_paths, "Reference file(s), one sentence a line")->required();
  cmd->add_option("--hyp", hyp_path, "Hypothesis file, one sentence a line")->required();
  cmd->add_option("--metrics", metrics, "Comma-separated: bleu, chrf")
      ->delimiter(',')
      ->check(CLI::IsMember({"bleu", "chrf"}));
  cmd->callback([] {
    // Read and check everything before printing anything, so an error leaves stdout empty; and
    // never print onto an input (a `>>` would append to the file being read).
    std::vector<std::string> inputs = ref_paths;
    inputs.push_back(hyp_path);
    check_output_path("-", {.kind = OutputKind::stream, .name = "eval:", .inputs = inputs});
    const std::vector<std::string> hyps = read_lines(hyp_path);
    std::vector<std::vector<std::string>> refs;
    for (const std::string& path : ref_paths) {
      refs.push_back(read_lines(path));
      TFM_CHECK(refs.back().size() == hyps.size())
          << "eval: " << path << " has " << refs.back().size() << " lines but " << hyp_path
          << " has " << hyps.size();
    }
    std::vector<std::string> scores, signatures;
    for (const std::string& m : metrics) {
      if (m == "bleu") {
        const eval::BleuScore s = eval::corpus_bleu(hyps, refs);
        scores.push_back(s.format());
        signatures.push_back("BLEU signature: " + s.signature());
      } else {
        const eval::ChrfScore s = eval::corpus_chrf(hyps, refs);
        scores.push_back(s.format());
        signatures.push_back("chrF2 signature: " + s.signature());
      }
    }
    OutputFile out("-");
    for (const auto& line : scores) out << line << "\n";
    for (const auto& line : signatures) out << line << "\n";
    out.close();
  });
}

}  // namespace tfm::cli
