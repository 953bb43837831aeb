// Helpers shared by the fuzz targets: an invariant check that aborts (so libFuzzer and the GCC
// driver both record the input), and a scratch file for readers that take a path.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace fuzz {

inline void check(bool ok, const char* target, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "%s: invariant violated: %s\n", target, what);
    std::abort();
  }
}

// Writes `bytes` to a per-process file named `name` under TMPDIR (default /tmp) and returns its
// path; the same path each call, so a run leaves one file behind, not one per input.
inline std::string scratch_file(const std::string& name, const std::string& bytes) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path = std::string(dir && *dir ? dir : "/tmp") + "/tfm_fuzz_" +
                           std::to_string(::getpid()) + "_" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  check(f != nullptr, "fuzz", "cannot create the scratch file");
  check(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size(), "fuzz",
        "cannot write the scratch file");
  std::fclose(f);
  return path;
}

}  // namespace fuzz
