# `cmake --install`: bin/tfm, lib/libtfm.{a,so}, include/tfm/*.h (the public API alone),
# lib/cmake/tfm/ (tfmConfig.cmake: find_package(tfm) gives tfm::tfm), lib/pkgconfig/tfm.pc, and the
# plugins that were built (lib/libtfm_cuda.so, lib/libtfm_mpi.so: CMakeLists.txt). A program
# linked to libtfm needs neither CUDA's libraries nor MPI's: the plugins open them when asked for.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TFM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tfm)
install(TARGETS tfm_lib EXPORT tfmTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET tfm)
  install(TARGETS tfm RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/tfm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(EXPORT tfmTargets NAMESPACE tfm:: DESTINATION ${TFM_CMAKE_DIR})

# What the config must find again: the static library's own dependencies.
if(BUILD_SHARED_LIBS)
  set(TFM_CONFIG_STATIC OFF)
else()
  set(TFM_CONFIG_STATIC ON)
endif()
# A program linking the static libtfm finds the plugins in lib/ through its RUNPATH.
if(TFM_CUDA_ENABLED OR TFM_MPI_ENABLED)
  set(TFM_CONFIG_PLUGINS ON)
else()
  set(TFM_CONFIG_PLUGINS OFF)
endif()
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/tfmConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/tfmConfig.cmake
                              INSTALL_DESTINATION ${TFM_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/tfmConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/tfmConfig.cmake ${CMAKE_BINARY_DIR}/tfmConfigVersion.cmake
              ${CMAKE_SOURCE_DIR}/cmake/FindDNNL.cmake
        DESTINATION ${TFM_CMAKE_DIR})

if(BUILD_SHARED_LIBS)
  set(TFM_PC_PRIVATE "")
else()
  set(TFM_PC_LIBS "-ldnnl -fopenmp -ldl")
  if(TFM_CONFIG_PLUGINS)
    string(APPEND TFM_PC_LIBS " -Wl,-rpath,\${libdir}")
  endif()
  set(TFM_PC_REQUIRES "sentencepiece yaml-0.1")
  set(TFM_PC_PRIVATE "Requires.private: ${TFM_PC_REQUIRES}\nLibs.private: ${TFM_PC_LIBS}")
endif()
# A sanitized libtfm needs the sanitizers' runtimes in every program that links it.
set(TFM_PC_SANITIZE "")
if(TFM_SANITIZE)
  set(TFM_PC_SANITIZE " -fsanitize=${TFM_SANITIZE}")
endif()
file(RELATIVE_PATH TFM_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${CMAKE_SOURCE_DIR}/cmake/tfm.pc.in ${CMAKE_BINARY_DIR}/tfm.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/tfm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
