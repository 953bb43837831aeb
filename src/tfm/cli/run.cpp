// tfm: the command line. Each subcommand lives in its own file; this only wires them up.
#include "tfm/cli/run.h"

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
#include "tfm/version.h"

namespace tfm::cli {

int run(int argc, char** argv) {
  CLI::App app{"tfm: train and run encoder-decoder Transformers (transformer.cpp)"};
  app.require_subcommand(1);
  // The version, the commit and the CPU level every kernel choice reads (TFM_CPU_ISA lowers it):
  // which build of which kernel runs is part of what a bug report needs.
  app.set_version_flag("--version", [] {
    return std::string("tfm ") + version() + " (commit " + build_commit() +
           ")\ncpu: " + cpu_isa_summary();
  });
  add_info(app);
  add_score(app);
  add_eval(app);
  add_translate(app);
  add_generate(app);
  add_vocab(app);
  add_train(app);
  add_average(app);
  add_convert(app);
  add_prepare_ding(app);
  add_prepare_bible(app);
  add_bench(app);
  add_serve(app);
  add_plot(app);
  try {
    app.parse(argc, argv);
    // What a command printed with std::cout may still sit in a buffer: a full disk or /dev/full
    // behind stdout must fail the command, not exit 0 with the output lost.
    flush_standard_output();
  } catch (const CLI::ParseError& e) {
    return report_parse_error(app, e, argc, argv);
  } catch (const Error& e) {
    // The source location helps developers, not users: TFM_DEBUG (any value but 0) shows it.
    const char* debug = std::getenv("TFM_DEBUG");
    const bool show = debug != nullptr && *debug != '\0' && std::string(debug) != "0";
    // One rank of a data-parallel run: end the whole job, or the others wait in a collective.
    if (dist::World* w = dist::distributed_world()) w->abort(show ? e.what() : e.message());
    std::cerr << "tfm: error: " << (show ? e.what() : e.message()) << "\n";
    // A value the command line gave that the library refuses is a usage error too.
    return dynamic_cast<const InvalidArgument*>(&e) != nullptr ? kUsageExit : 1;
  } catch (const std::exception& e) {
    if (dist::World* w = dist::distributed_world()) w->abort(e.what());
    std::cerr << "tfm: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tfm::cli
