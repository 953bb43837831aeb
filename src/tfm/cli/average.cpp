// tfm average --out DIR DIR...: the element-wise mean of several checkpoints of one model.
#include <CLI/CLI.hpp>

#include <iostream>

#include "tfm/cli/commands.h"
#include "tfm/output_path.h"
#include "tfm/train/average.h"

namespace tfm::cli {

void add_average(CLI::App& app) {
  auto* cmd = app.add_subcommand("average", "Average the parameters of several checkpoints");
  static std::string out;
  static std::vector<std::string> dirs;
  cmd->add_option("-o,--out", out, "Output model directory")->required();
  cmd->add_option("dirs", dirs, "Model directories (same configuration)")->required();
  cmd->callback([] {
    // The average replaces --out whole: only an absent or empty directory, or a model directory,
    // and never one of the inputs or a directory holding one.
    check_output_path(
        out, {.kind = OutputKind::model_directory, .name = "average: --out", .model_dirs = dirs});
    average_models(dirs, out);
    std::cout << "averaged " << dirs.size() << " checkpoints into " << out << "\n";
  });
}

}  // namespace tfm::cli
