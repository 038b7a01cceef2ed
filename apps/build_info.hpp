// What this plexus build is: its version, the git description of its sources and the
// configuration it was built with. `plexus --version` prints it; every JSON and CSV the program
// and the benchmarks write carries it (target plexus_build_info, apps/CMakeLists.txt).
#pragma once

#include <string>

namespace plexus::app {

struct BuildInfo {
  std::string version;     ///< the project version (CMake's PROJECT_VERSION)
  std::string git;         ///< `git describe --always --dirty` of the sources at build time, or "unknown"
  std::string build_type;  ///< CMAKE_BUILD_TYPE, "(none)" when empty
  std::string compiler;    ///< C++ compiler id and version
  std::string cuda;        ///< whether the cuda kernel plugin was built, and for which architectures
  std::string libxsmm;     ///< whether the cpu kernel uses libxsmm
  std::string hdf5;        ///< the HDF5 library's version (and "(parallel)")
  std::string dbcsr;       ///< whether the comm_dbcsr plugin was built, or why not
};

/// This build's facts (filled at compile time; the same on every call).
const BuildInfo& build_info();

/// The text of `plexus --version`.
std::string version_text();

}  // namespace plexus::app
