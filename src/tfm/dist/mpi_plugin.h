// The MPI transport's plugin (core/plugin.h): libtfm_mpi.so, built from mpi_world.cpp where CMake
// finds MPI, the only code that sees <mpi.h>. dist::world() opens it when the launcher started
// several processes, so libtfm and the programs linked to it need no MPI library otherwise.
#pragma once

#include <string>

#include "tfm/dist/world.h"

namespace tfm::dist {

inline constexpr char kMpiPluginFile[] = "libtfm_mpi.so";
inline constexpr char kMpiPluginEntry[] = "tfm_plugin_mpi_world";
// extern "C" in the plugin: MPI's world of this process (the caller owns it), or null with *why
// set when the plugin was built for another tfm version than `version`.
using MpiPluginEntry = World* (*)(const char* version, double collective_timeout_seconds,
                                  std::string* why);

}  // namespace tfm::dist
