// `plexus --version` and the build facts every output file carries: the version, the git
// description of the sources at build time and the build configuration (apps/CMakeLists.txt
// generates both headers).
#include <hdf5.h>

#include <string>

#include "build_info.hpp"
#include "plexus_build_config.hpp"  // PLEXUS_VERSION, PLEXUS_BUILD_*: the configuration (CMake)
#include "plexus_git_version.hpp"   // PLEXUS_GIT_DESCRIBE: git describe --always --dirty, or "unknown"

namespace plexus::app {

const BuildInfo& build_info() {
  static const BuildInfo info = [] {
    BuildInfo b;
    b.version = PLEXUS_VERSION;
    b.git = PLEXUS_GIT_DESCRIBE;
    b.build_type = PLEXUS_BUILD_TYPE;
    b.compiler = PLEXUS_BUILD_COMPILER;
    b.cuda = PLEXUS_BUILD_CUDA;
    b.libxsmm = PLEXUS_BUILD_LIBXSMM;
    b.hdf5 = H5_VERS_INFO;
#ifdef H5_HAVE_PARALLEL
    b.hdf5 += " (parallel)";
#endif
    b.dbcsr = PLEXUS_BUILD_DBCSR;
    return b;
  }();
  return info;
}

std::string version_text() {
  const BuildInfo& b = build_info();
  std::string t = "plexus " + b.version + " (git " + b.git + ")\n";
  t += "  build type         " + b.build_type + ", " + b.compiler + "\n";
  t += "  CUDA kernel plugin " + b.cuda + "\n";
  t += "  libxsmm            " + b.libxsmm + "\n";
  t += "  HDF5               " + b.hdf5 + "\n";
  t += "  DBCSR              " + b.dbcsr + "\n";
  return t;
}

}  // namespace plexus::app
