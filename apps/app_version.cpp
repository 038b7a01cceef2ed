// `plexus --version`: the version, the git description of the sources at build time and the build
// configuration (apps/CMakeLists.txt generates both headers).
#include <hdf5.h>

#include <string>

#include "plexus_build_config.hpp"  // PLEXUS_VERSION, PLEXUS_BUILD_*: the configuration (CMake)
#include "plexus_git_version.hpp"   // PLEXUS_GIT_DESCRIBE: git describe --always --dirty, or "unknown"

namespace plexus::app {

std::string version_text() {
  std::string t = "plexus " PLEXUS_VERSION " (git " PLEXUS_GIT_DESCRIBE ")\n";
  t += "  build type         " PLEXUS_BUILD_TYPE ", " PLEXUS_BUILD_COMPILER "\n";
  t += "  CUDA kernel plugin " PLEXUS_BUILD_CUDA "\n";
  t += "  libxsmm            " PLEXUS_BUILD_LIBXSMM "\n";
  t += "  HDF5               " H5_VERS_INFO;
#ifdef H5_HAVE_PARALLEL
  t += " (parallel)";
#endif
  t += "\n";
  t += "  DBCSR              " PLEXUS_BUILD_DBCSR "\n";
  return t;
}

}  // namespace plexus::app
