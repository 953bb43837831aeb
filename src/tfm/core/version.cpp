#include "tfm/version.h"

// TFM_VERSION_STRING is set by CMake on this file alone; build_commit() is defined in the
// build's generated build_commit.cpp (cmake/build_commit.cmake), rewritten when the commit
// changes, so neither recompiles anything else.
#ifndef TFM_VERSION_STRING
#error "TFM_VERSION_STRING (CMake's project version) must be defined"
#endif

namespace tfm {

const char* version() {
  return TFM_VERSION_STRING;
}

}  // namespace tfm
