// Usage errors, in one place for every subcommand: a command line that names an unknown command
// or flag, lacks a required flag or gives a bad value is told what it got wrong in its own words,
// with the closest name the command knows (core/suggest.h) ("unknown command 'tranlsate'; did you
// mean 'translate'?"), and exits with kUsageExit, as Unix tools do (CLI11's own statuses are
// 105-114).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace tfm::cli {

inline constexpr int kUsageExit = 2;

// Prints what `e` (thrown by app.parse(argc, argv)) means for this command line and returns the
// exit status: help and --version go to stdout with status 0; every other parse error is one
// message on stderr (each unknown command or flag with its suggestion, or CLI11's message under
// the command's name) and kUsageExit.
int report_parse_error(const CLI::App& app, const CLI::ParseError& e, int argc,
                       const char* const* argv);

// Every flag of `app`, as typed: "--model", "-m".
std::vector<std::string> flag_names(const CLI::App& app);

}  // namespace tfm::cli
