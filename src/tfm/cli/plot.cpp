// tfm plot RUN... [-o FILE]: each run's train.log (RUN a model directory or the log itself) drawn
// as training curves in one SVG file (train/curves_svg.h), the runs overlaid.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>

#include "tfm/cli/commands.h"
#include "tfm/core/check.h"
#include "tfm/core/file_util.h"
#include "tfm/core/output_file.h"
#include "tfm/output_path.h"
#include "tfm/train/curves_svg.h"

namespace tfm::cli {

void add_plot(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "plot", "Draw training curves (loss, perplexity, BLEU, learning rate, ...) as an SVG file");
  static std::vector<std::string> runs;
  static std::string output = "curves.svg", title;
  cmd->add_option("runs", runs, "Model directories (their train.log) or train.log files")
      ->required();
  cmd->add_option("-o,--output", output, "The SVG file (default curves.svg; -: stdout)");
  cmd->add_option("--title", title, "Title (default: the runs' names)");
  cmd->callback([] {
    namespace fs = std::filesystem;
    std::vector<std::string> logs;
    for (const std::string& run : runs)
      logs.push_back(fs::is_directory(run) ? (fs::path(run) / "train.log").string() : run);
    // Never over a train.log it reads or a file of a model directory (docs/failure.md, "Output
    // paths"); the SVG is renamed over the path, so a FIFO or a device there is refused too.
    check_output_path(output, {.kind = output == "-" ? OutputKind::stream : OutputKind::file,
                               .name = "plot: --output",
                               .inputs = logs});
    std::vector<CurveRun> curves;
    for (size_t i = 0; i < runs.size(); ++i) {
      const std::string& run = runs[i];
      const std::string& log = logs[i];
      const bool dir = log != run;
      TFM_CHECK(fs::exists(log)) << "plot: "
                                 << (dir ? "no train.log in " + run : run + " does not exist");
      curves.push_back({run, read_train_log(log)});
    }
    std::string name = title;
    for (size_t i = 0; title.empty() && i < runs.size(); ++i) name += (i > 0 ? ", " : "") + runs[i];
    const std::string svg = training_curves_svg(curves, name);
    if (output == "-") {
      OutputFile out("-");
      out << svg;
      out.close();
      return;
    }
    write_file_atomic(output, svg);
    size_t updates = 0, validations = 0;
    for (const CurveRun& c : curves) {
      updates += c.history.stats.size();
      validations += c.history.validations.size();
    }
    std::cout << "wrote " << output << ": " << updates << " log windows and " << validations
              << " validations of " << curves.size() << " run(s)\n";
  });
}

}  // namespace tfm::cli
