# Finds what plexus builds against and wraps what needs wrapping in imported targets.

# A required library without a CMake package: its header and its file, found as <PREFIX>_INCLUDE_DIR
# and <PREFIX>_LIBRARY (cache entries a user may set), wrapped in the imported target plexus::<name>.
function(plexus_required_library name prefix header library what debian)
  find_path(${prefix}_INCLUDE_DIR ${header})
  find_library(${prefix}_LIBRARY NAMES ${library})
  if(NOT ${prefix}_INCLUDE_DIR OR NOT ${prefix}_LIBRARY)
    message(FATAL_ERROR "${what} was not found (Debian: ${debian}; scripts/install-deps.sh installs it)")
  endif()
  add_library(plexus::${name} INTERFACE IMPORTED)
  set_target_properties(plexus::${name} PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${${prefix}_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${${prefix}_LIBRARY}")
endfunction()

find_package(MPI REQUIRED COMPONENTS C)
# Where Open MPI keeps its system-wide parameter file (plexus::mpi::open_mpi_parameter reads it):
# ompi_info beside mpiexec says; empty with another MPI library or without ompi_info.
set(PLEXUS_OMPI_SYSCONFDIR "")
if(MPIEXEC_EXECUTABLE)
  get_filename_component(_plexus_mpi_bin "${MPIEXEC_EXECUTABLE}" DIRECTORY)
  find_program(PLEXUS_OMPI_INFO ompi_info HINTS "${_plexus_mpi_bin}")
  if(PLEXUS_OMPI_INFO)
    execute_process(COMMAND "${PLEXUS_OMPI_INFO}" --path sysconfdir --parsable OUTPUT_VARIABLE _plexus_ompi_sysconf
                    ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _plexus_ompi_rc)
    if(_plexus_ompi_rc EQUAL 0 AND _plexus_ompi_sysconf MATCHES "^path:sysconfdir:(.+)$")
      set(PLEXUS_OMPI_SYSCONFDIR "${CMAKE_MATCH_1}")
    endif()
  endif()
endif()
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Boost 1.74 REQUIRED COMPONENTS filesystem)
find_package(spdlog REQUIRED)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
# LAPACK: OpenBLAS carries it (dsygvd for the tests' dense references, dsyevd for spectral bounds).
find_package(LAPACK REQUIRED)
# gzip-compressed input files are read through zlib, and those up to 64 MiB decompressed whole by
# libdeflate (Debian: libdeflate-dev), 2.5 times as fast.
find_package(ZLIB REQUIRED)
plexus_required_library(libdeflate LIBDEFLATE libdeflate.h deflate libdeflate libdeflate-dev)
# JSON outputs (plexus run --json) and LogP parameter files (plexus/logp.hpp, so a public dependency
# of plexus::core) through nlohmann/json (Debian: nlohmann-json3-dev).
find_package(nlohmann_json 3.10 REQUIRED)

# FFTW3 (double precision) for the cg_bands solver's local 1D and 2D transforms (Debian: libfftw3-dev).
plexus_required_library(fftw3 FFTW3 fftw3.h fftw3 FFTW3 libfftw3-dev)
# FFTW3's MPI transforms (Debian: libfftw3-mpi-dev), optional: only plexus-fft-bench compares
# against them; without it that benchmark is not built.
find_path(FFTW3_MPI_INCLUDE_DIR fftw3-mpi.h)
find_library(FFTW3_MPI_LIBRARY NAMES fftw3_mpi)
if(FFTW3_MPI_INCLUDE_DIR AND FFTW3_MPI_LIBRARY)
  add_library(plexus::fftw3_mpi INTERFACE IMPORTED)
  set_target_properties(plexus::fftw3_mpi PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${FFTW3_MPI_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${FFTW3_MPI_LIBRARY};plexus::fftw3")
else()
  message(STATUS "FFTW3 MPI (fftw3-mpi.h, libfftw3_mpi) not found: plexus-fft-bench is not built")
endif()

include(PlexusTeuchos)

# libxsmm (Debian ships static, position-independent archives and a pkg-config file).
set(PLEXUS_HAVE_LIBXSMM OFF)
if(NOT PLEXUS_ENABLE_LIBXSMM STREQUAL "OFF")
  find_path(LIBXSMM_INCLUDE_DIR libxsmm.h)
  find_library(LIBXSMM_LIBRARY NAMES xsmm PATHS /usr/lib /usr/local/lib)
  find_library(LIBXSMM_NOBLAS_LIBRARY NAMES xsmmnoblas PATHS /usr/lib /usr/local/lib)
  if(LIBXSMM_INCLUDE_DIR AND LIBXSMM_LIBRARY)
    set(PLEXUS_HAVE_LIBXSMM ON)
    add_library(plexus::libxsmm INTERFACE IMPORTED)
    set_target_properties(plexus::libxsmm PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${LIBXSMM_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${LIBXSMM_LIBRARY};BLAS::BLAS;pthread;rt;dl;m")
    message(STATUS "plexus: libxsmm found: ${LIBXSMM_LIBRARY}")
  elseif(PLEXUS_ENABLE_LIBXSMM STREQUAL "ON")
    message(FATAL_ERROR "PLEXUS_ENABLE_LIBXSMM=ON but libxsmm was not found (Debian: libxsmm-dev)")
  else()
    message(STATUS "plexus: libxsmm not found; the CPU kernel uses BLAS only")
  endif()
endif()

# CUDA is optional; nothing in the foundation needs it.
set(PLEXUS_HAVE_CUDA OFF)
if(NOT PLEXUS_ENABLE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Device code for the A100 (sm_80) and H100 (sm_90) generations, and PTX that newer GPUs
    # compile when loading; -DCMAKE_CUDA_ARCHITECTURES=native builds for the GPUs of this machine.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(PLEXUS_HAVE_CUDA ON)
    message(STATUS "plexus: CUDA ${CUDAToolkit_VERSION} found (${CMAKE_CUDA_COMPILER}): the cuda kernel plugin is "
                   "built for ${CMAKE_CUDA_ARCHITECTURES}")
  elseif(PLEXUS_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "PLEXUS_ENABLE_CUDA=ON but no CUDA compiler was found")
  endif()
endif()

# Warnings as errors on plexus's own code only.
add_library(plexus_warnings INTERFACE)
target_compile_options(plexus_warnings INTERFACE -Wall -Wextra -Werror)

# Parallel HDF5 (Debian: libhdf5-openmpi-dev) for the g4 solver's output and `plexus g4-diff`.
# FindHDF5 is asked for the parallel build first; when it finds none (or a serial one, e.g.
# because h5cc of a serial HDF5 comes first in PATH), Debian's Open MPI flavour is located directly.
# Either way the library must be parallel (H5_HAVE_PARALLEL): the solver writes through MPI-IO.
set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 QUIET COMPONENTS C)
set(_plexus_hdf5_inc "")
set(_plexus_hdf5_lib "")
if(HDF5_FOUND AND HDF5_IS_PARALLEL)
  set(_plexus_hdf5_inc ${HDF5_C_INCLUDE_DIRS})
  if(NOT _plexus_hdf5_inc)
    set(_plexus_hdf5_inc ${HDF5_INCLUDE_DIRS})
  endif()
  if(HDF5_C_LIBRARY_hdf5)
    set(_plexus_hdf5_lib ${HDF5_C_LIBRARY_hdf5})  # the shared library brings its own dependencies
  else()
    set(_plexus_hdf5_lib ${HDF5_C_LIBRARIES})
  endif()
else()
  find_path(PLEXUS_HDF5_INCLUDE_DIR hdf5.h PATHS /usr/include/hdf5/openmpi NO_DEFAULT_PATH)
  find_library(PLEXUS_HDF5_LIBRARY NAMES hdf5 hdf5_openmpi
               PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/hdf5/openmpi NO_DEFAULT_PATH)
  if(PLEXUS_HDF5_INCLUDE_DIR AND PLEXUS_HDF5_LIBRARY)
    set(_plexus_hdf5_inc ${PLEXUS_HDF5_INCLUDE_DIR})
    set(_plexus_hdf5_lib ${PLEXUS_HDF5_LIBRARY})
  endif()
endif()
set(_plexus_hdf5_parallel OFF)
foreach(_dir IN LISTS _plexus_hdf5_inc)
  if(EXISTS ${_dir}/H5pubconf.h)
    file(STRINGS ${_dir}/H5pubconf.h _h5_par REGEX "^#define H5_HAVE_PARALLEL 1")
    if(_h5_par)
      set(_plexus_hdf5_parallel ON)
    endif()
  endif()
endforeach()
if(NOT _plexus_hdf5_lib OR NOT _plexus_hdf5_parallel)
  message(FATAL_ERROR "plexus: a parallel HDF5 (MPI-IO) was not found (include: '${_plexus_hdf5_inc}', "
                      "library: '${_plexus_hdf5_lib}'). Debian: apt-get install libhdf5-openmpi-dev "
                      "(scripts/install-deps.sh does)")
endif()
add_library(plexus::hdf5 INTERFACE IMPORTED)
set_target_properties(plexus::hdf5 PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${_plexus_hdf5_inc}"
  INTERFACE_LINK_LIBRARIES "${_plexus_hdf5_lib};MPI::MPI_C")
message(STATUS "plexus: parallel HDF5: ${_plexus_hdf5_lib}")
