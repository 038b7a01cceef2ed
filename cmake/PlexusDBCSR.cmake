# DBCSR for the optional comm_dbcsr plugin (DBCSR's own multiply as a plexus multiply algorithm).
#
#   PLEXUS_ENABLE_DBCSR=AUTO|ON|OFF   AUTO (default): built when DBCSR is found; ON: an error when not.
#
# Debian's libdbcsr-dev (2.5) is a static Fortran library with a CMake package (DBCSR::dbcsr_c, the
# C API, over DBCSR::dbcsr) whose link interface names MPI::MPI_Fortran and OpenMP::OpenMP_Fortran:
# the Fortran language (gfortran) is enabled, and those targets made, only when the package is
# there, so a configuration without DBCSR needs no Fortran compiler. Included from the top level:
# a language must be enabled in a directory above every target that links it.
#
# Sets PLEXUS_HAVE_DBCSR, and PLEXUS_DBCSR_WHY_NOT when it is OFF (for plexus --version).
set(PLEXUS_ENABLE_DBCSR AUTO CACHE STRING "Build the comm_dbcsr plugin (needs libdbcsr-dev and gfortran): AUTO, ON or OFF")
set_property(CACHE PLEXUS_ENABLE_DBCSR PROPERTY STRINGS AUTO ON OFF)

set(PLEXUS_HAVE_DBCSR OFF)
set(_plexus_dbcsr_why "")
if(PLEXUS_ENABLE_DBCSR STREQUAL "OFF")
  set(_plexus_dbcsr_why "PLEXUS_ENABLE_DBCSR=OFF")
elseif(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # DBCSR is built with gfortran and its OpenMP is GNU's libgomp; a plugin compiled by another C++
  # compiler would bring a second OpenMP runtime into the process (clang's libomp).
  set(_plexus_dbcsr_why "DBCSR (gfortran, libgomp) is used with the GNU C++ compiler only, not ${CMAKE_CXX_COMPILER_ID}")
else()
  find_package(DBCSR CONFIG QUIET)
  if(NOT DBCSR_FOUND OR NOT TARGET DBCSR::dbcsr_c)
    set(_plexus_dbcsr_why "DBCSR's CMake package was not found (Debian: apt-get install libdbcsr-dev gfortran)")
  else()
    include(CheckLanguage)
    check_language(Fortran)
    if(NOT CMAKE_Fortran_COMPILER)
      set(_plexus_dbcsr_why "DBCSR ${DBCSR_VERSION} was found but no Fortran compiler, which linking it needs (Debian: gfortran)")
    else()
      enable_language(Fortran)
      find_package(MPI COMPONENTS Fortran)
      find_package(OpenMP COMPONENTS Fortran)
      if(NOT TARGET MPI::MPI_Fortran OR NOT TARGET OpenMP::OpenMP_Fortran)
        set(_plexus_dbcsr_why "DBCSR ${DBCSR_VERSION} was found but not MPI's or OpenMP's Fortran support, which linking it needs")
      else()
        set(PLEXUS_HAVE_DBCSR ON)
      endif()
    endif()
  endif()
endif()

if(PLEXUS_HAVE_DBCSR)
  message(STATUS "plexus: DBCSR ${DBCSR_VERSION} found (${DBCSR_DIR}): the comm_dbcsr plugin is built")
elseif(PLEXUS_ENABLE_DBCSR STREQUAL "ON")
  message(FATAL_ERROR "PLEXUS_ENABLE_DBCSR=ON but comm_dbcsr cannot be built: ${_plexus_dbcsr_why}")
else()
  message(STATUS "plexus: comm_dbcsr is not built: ${_plexus_dbcsr_why}")
endif()
set(PLEXUS_DBCSR_WHY_NOT "${_plexus_dbcsr_why}")
unset(_plexus_dbcsr_why)
