// The `tfm` command line as a function: the program's main() (cli/main.cpp) and the Python
// package's `tfm` command (python/src/cli.cpp) both call it.
#pragma once

namespace tfm::cli {

// Parses argv and runs the subcommand; returns the exit status. Errors are printed on stderr
// ("tfm: error: ..."), as the program prints them.
int run(int argc, char** argv);

}  // namespace tfm::cli
