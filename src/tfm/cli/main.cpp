// tfm: the command line (cli/run.cpp); each subcommand lives in its own file.
#include "tfm/cli/run.h"

int main(int argc, char** argv) {
  return tfm::cli::run(argc, argv);
}
