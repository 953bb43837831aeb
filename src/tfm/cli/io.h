// Line input shared by the subcommands.
#pragma once

#include <string>
#include <vector>

namespace tfm::cli {

// The lines of `path` ("-" or empty: standard input), split on '\n' only, bytes kept as they are;
// a last line without '\n' counts. Errors name the path.
std::vector<std::string> read_lines(const std::string& path);

// The files a prepare command writes, DIR/{train,valid,test}.SUFFIX for each suffix, checked as
// output files before anything is read (tfm::check_output_path: never one of the inputs, never a
// FIFO or a device, never a file of a model directory). `flag` names --out in the errors.
void check_split_outputs(const std::string& flag, const std::string& dir,
                         const std::vector<std::string>& suffixes,
                         const std::vector<std::string>& inputs);

}  // namespace tfm::cli
