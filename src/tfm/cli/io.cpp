#include "tfm/cli/io.h"

#include <fstream>
#include <iostream>

#include "tfm/core/check.h"

namespace tfm::cli {

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  if (path.empty() || path == "-") {
    for (std::string line; std::getline(std::cin, line);) lines.push_back(line);
    TFM_CHECK(!std::cin.bad()) << "error reading standard input";
    return lines;
  }
  std::ifstream in(path, std::ios::binary);
  TFM_CHECK(in) << "cannot open " << path;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  TFM_CHECK(!in.bad()) << "error reading " << path;
  return lines;
}

}  // namespace tfm::cli
