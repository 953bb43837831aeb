#include "tfm/core/plugin.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <vector>

// The install's bin/ → lib/ (CMake's CMAKE_INSTALL_BINDIR to CMAKE_INSTALL_LIBDIR).
#ifndef TFM_BIN_TO_LIB
#define TFM_BIN_TO_LIB "../lib"
#endif

namespace tfm::plugin {

namespace {

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The directory of the binary this code is linked into: the program itself when libtfm is
// static in it (the main program's link map has an empty name), else libtfm.so or the Python
// extension.
std::string own_directory() {
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(&own_directory), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) == 0 ||
      map == nullptr)
    return "";
  std::string path = map->l_name != nullptr ? map->l_name : "";
  if (path.empty()) {
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "";
    path.assign(buf, static_cast<size_t>(n));
  }
  char* real = realpath(path.c_str(), nullptr);
  if (real != nullptr) {
    path = real;
    std::free(real);
  }
  return dir_of(path);
}

std::vector<std::string> search_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("TFM_PLUGIN_PATH"); env != nullptr && *env != '\0') {
    std::string s = env;
    for (size_t start = 0; start <= s.size();) {
      const size_t end = std::min(s.find(':', start), s.size());
      if (end > start) dirs.push_back(s.substr(start, end - start));
      start = end + 1;
    }
    return dirs;
  }
  if (const std::string own = own_directory(); !own.empty()) {
    dirs.push_back(own);
    dirs.push_back(own + "/" + TFM_BIN_TO_LIB);
  }
  return dirs;
}

LoadResult open_file(const std::string& path, const char* symbol, bool global) {
  LoadResult r;
  r.path = path;
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
  if (handle == nullptr) {
    const char* e = dlerror();
    r.error = path + " cannot be loaded: " + (e != nullptr ? e : "dlopen failed");
    return r;
  }
  r.entry = dlsym(handle, symbol);
  if (r.entry == nullptr) r.error = path + " has no " + symbol + " (not a tfm plugin?)";
  return r;
}

}  // namespace

LoadResult open(const std::string& file, const char* symbol, bool global) {
  const bool env = std::getenv("TFM_PLUGIN_PATH") != nullptr && *std::getenv("TFM_PLUGIN_PATH");
  std::string looked;
  for (const std::string& dir : search_dirs()) {
    const std::string path = dir + "/" + file;
    looked += (looked.empty() ? "" : ", ") + dir;
    if (access(path.c_str(), F_OK) == 0) return open_file(path, symbol, global);
  }
  if (!env) {
    // The loader's search (LD_LIBRARY_PATH, RUNPATH, the system): "not found" is told apart
    // from a plugin that is there but misses one of its own libraries by the error's subject.
    LoadResult r = open_file(file, symbol, global);
    if (r.entry != nullptr || r.error.find(": " + file + ": cannot open") == std::string::npos)
      return r;
    looked += (looked.empty() ? "" : ", ") + std::string("the library path");
  }
  LoadResult r;
  r.path = file;
  r.error = file + " not found (looked in " + looked + ")";
  return r;
}

}  // namespace tfm::plugin
