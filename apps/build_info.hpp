// What this plexus build is: its version, the git description of its sources and the
// configuration it was built with, and the other facts of a run that output files record (date,
// host, MPI library, parameters). `plexus --version` prints the first; every JSON and CSV the
// program and the benchmarks write carries them all (target plexus_build_info, apps/CMakeLists.txt).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "plexus/parameters.hpp"

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

// ---- facts of a run, for the metadata of output files (run_facts.cpp) -------------------------

/// build_info() as a JSON object (the "plexus" object of every metadata).
nlohmann::json build_info_json();
/// Now, UTC, ISO 8601: "2026-11-24T16:23:35Z".
std::string utc_now();
/// This host's name ("unknown" when it cannot be read).
std::string host_name();
/// The first line of the MPI library's description ("Open MPI v4.1.4, ..."); local, no MPI traffic.
std::string mpi_library();
/// A parameter list as a JSON object: sublists as objects, int, long long, double (NaN and
/// infinities as null), bool and string values with their types, anything else as its text.
/// Reading the list for the record does not mark its entries used.
nlohmann::json parameters_object(const ParameterList& list);

}  // namespace plexus::app
