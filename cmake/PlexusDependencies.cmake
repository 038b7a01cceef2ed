# Finds what plexus builds against and wraps what needs wrapping in imported targets.
find_package(MPI REQUIRED COMPONENTS C)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Boost 1.74 REQUIRED COMPONENTS filesystem)
find_package(spdlog REQUIRED)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)

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
    set(PLEXUS_HAVE_CUDA ON)
    message(STATUS "plexus: CUDA compiler found: ${CMAKE_CUDA_COMPILER} (no CUDA plugin is built yet)")
  elseif(PLEXUS_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "PLEXUS_ENABLE_CUDA=ON but no CUDA compiler was found")
  endif()
endif()

# Warnings as errors on plexus's own code only.
add_library(plexus_warnings INTERFACE)
target_compile_options(plexus_warnings INTERFACE -Wall -Wextra -Werror)
