// The optional parts of tfm are shared libraries of their own, opened when first asked for: the
// CUDA backend (libtfm_cuda.so, ops/cuda_backend.h) and the MPI transport (libtfm_mpi.so,
// dist/world.cpp). libtfm has no link-time reference to either, so a program linked to it (the
// `tfm` command, the Python extension, a user's program) needs neither cuBLASLt nor MPI to start,
// and loads them only when a cuda device or several ranks are asked for.
#pragma once

#include <string>

namespace tfm::plugin {

// Where a plugin was looked for and why it did not load (for the error a caller throws).
struct LoadResult {
  void* entry = nullptr;  // the plugin's entry symbol; null when it did not load
  std::string path;       // the file that was opened (or the one that failed to open)
  std::string error;      // what went wrong, naming the missing file or library
};

// Opens `file` (e.g. "libtfm_cuda.so") and finds `symbol` in it. Searched, in order:
//   - $TFM_PLUGIN_PATH (directories separated by ':'), when set: these alone;
//   - the directory of the binary holding libtfm (the program, libtfm.so or the Python
//     extension), and that directory's ../lib (a bin/tfm next to lib/);
//   - the dynamic loader's own search: LD_LIBRARY_PATH, the program's RUNPATH (the build tree
//     sets it to the build directory), the system's library directories.
// `global`: the plugin's dependencies are made visible to libraries they open themselves (Open
// MPI's components need libmpi's symbols). A plugin, once opened, stays open. Never throws.
LoadResult open(const std::string& file, const char* symbol, bool global);

}  // namespace tfm::plugin
