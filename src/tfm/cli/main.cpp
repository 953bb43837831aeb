// tfm: the command line. Each subcommand lives in its own file; this only wires them up.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

#include "tfm/cli/commands.h"
#include "tfm/cli/usage.h"
#include "tfm/core/check.h"
#include "tfm/core/cpu_isa.h"
#include "tfm/core/output_file.h"
#include "tfm/dist/world.h"

int main(int argc, char** argv) {
  CLI::App app{"tfm: train and run encoder-decoder Transformers (transformer.cpp)"};
  app.require_subcommand(1);
  // The CPU level every kernel choice reads (TFM_CPU_ISA lowers it): which build of which kernel
  // runs is part of what a bug report needs.
  app.set_version_flag("--version",
                       [] { return "tfm " TFM_VERSION "\ncpu: " + tfm::cpu_isa_summary(); });
  tfm::cli::add_info(app);
  tfm::cli::add_score(app);
  tfm::cli::add_eval(app);
  tfm::cli::add_translate(app);
  tfm::cli::add_generate(app);
  tfm::cli::add_vocab(app);
  tfm::cli::add_train(app);
  tfm::cli::add_average(app);
  tfm::cli::add_prepare_ding(app);
  tfm::cli::add_prepare_bible(app);
  tfm::cli::add_bench(app);
  tfm::cli::add_serve(app);
  tfm::cli::add_plot(app);
  try {
    app.parse(argc, argv);
    // What a command printed with std::cout may still sit in a buffer: a full disk or /dev/full
    // behind stdout must fail the command, not exit 0 with the output lost.
    tfm::flush_standard_output();
  } catch (const CLI::ParseError& e) {
    return tfm::cli::report_parse_error(app, e, argc, argv);
  } catch (const tfm::Error& e) {
    // The source location helps developers, not users: TFM_DEBUG (any value but 0) shows it.
    const char* debug = std::getenv("TFM_DEBUG");
    const bool show = debug != nullptr && *debug != '\0' && std::string(debug) != "0";
    // One rank of a data-parallel run: end the whole job, or the others wait in a collective.
    if (tfm::dist::World* w = tfm::dist::distributed_world())
      w->abort(show ? e.what() : e.message());
    std::cerr << "tfm: error: " << (show ? e.what() : e.message()) << "\n";
    // A value the command line gave that the library refuses is a usage error too.
    return dynamic_cast<const tfm::InvalidArgument*>(&e) != nullptr ? tfm::cli::kUsageExit : 1;
  } catch (const std::exception& e) {
    if (tfm::dist::World* w = tfm::dist::distributed_world()) w->abort(e.what());
    std::cerr << "tfm: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
