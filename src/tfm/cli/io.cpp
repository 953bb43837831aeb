#include "tfm/cli/io.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "tfm/core/check.h"
#include "tfm/output_path.h"

namespace tfm::cli {

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  if (path.empty() || path == "-") {
    for (std::string line; std::getline(std::cin, line);) lines.push_back(line);
    TFM_CHECK(!std::cin.bad()) << "error reading standard input";
    return lines;
  }
  // A directory opens but fails at the first read with a vaguer message; FIFOs and <(...) are
  // read once, as a file is.
  TFM_CHECK(!std::filesystem::is_directory(path))
      << "cannot read " << path << ": it is a directory";
  std::ifstream in(path, std::ios::binary);
  TFM_CHECK(in) << "cannot open " << path << ": " << std::strerror(errno);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  TFM_CHECK(!in.bad()) << "error reading " << path << ": " << std::strerror(errno);
  return lines;
}

void check_split_outputs(const std::string& flag, const std::string& dir,
                         const std::vector<std::string>& suffixes,
                         const std::vector<std::string>& inputs) {
  for (const char* split : {"train", "valid", "test"})
    for (const std::string& suffix : suffixes)
      check_output_path((std::filesystem::path(dir) / (std::string(split) + "." + suffix)).string(),
                        {.kind = OutputKind::file, .name = flag, .inputs = inputs});
}

}  // namespace tfm::cli
