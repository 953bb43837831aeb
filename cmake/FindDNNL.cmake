# Finds oneDNN from its header and library, without its CMake package config.
#
# Debian's dnnl-config.cmake calls find_package(OpenCL) because the library was built with the
# OpenCL GPU runtime, and the OpenCL headers come only from a Recommends of libdnnl-dev: a build
# that used the config failed on a fresh machine. tfm uses oneDNN's CPU engine only, so the header
# and the shared library are all it needs. Defines DNNL_FOUND, DNNL_VERSION and DNNL::dnnl.
find_path(DNNL_INCLUDE_DIR NAMES oneapi/dnnl/dnnl.hpp)
find_library(DNNL_LIBRARY NAMES dnnl)
if(DNNL_INCLUDE_DIR AND EXISTS "${DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h")
  file(STRINGS "${DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h" _dnnl_version_lines
       REGEX "#define DNNL_VERSION_(MAJOR|MINOR|PATCH) ")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define DNNL_VERSION_${_part} ([0-9]+).*" "\\1" DNNL_VERSION_${_part}
                         "${_dnnl_version_lines}")
  endforeach()
  set(DNNL_VERSION "${DNNL_VERSION_MAJOR}.${DNNL_VERSION_MINOR}.${DNNL_VERSION_PATCH}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(DNNL REQUIRED_VARS DNNL_LIBRARY DNNL_INCLUDE_DIR
                                  VERSION_VAR DNNL_VERSION)
if(DNNL_FOUND AND NOT TARGET DNNL::dnnl)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES IMPORTED_LOCATION "${DNNL_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${DNNL_INCLUDE_DIR}")
endif()
mark_as_advanced(DNNL_INCLUDE_DIR DNNL_LIBRARY)
