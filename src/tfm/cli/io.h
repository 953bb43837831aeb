// Line input shared by the subcommands.
#pragma once

#include <string>
#include <vector>

namespace tfm::cli {

// The lines of `path` ("-" or empty: standard input), split on '\n' only, bytes kept as they are;
// a last line without '\n' counts. Errors name the path.
std::vector<std::string> read_lines(const std::string& path);

}  // namespace tfm::cli
