# Helpers for the test suites.
#   plexus_add_unit_test(<name> SOURCES <files> [LIBRARIES <libs>] [TIMEOUT s])
#     one-rank GoogleTest executable, run directly by CTest (OMP_NUM_THREADS=2).
#   plexus_add_mpi_test(<name> SOURCES <files> RANKS <n...> [LIBRARIES <libs>] [TIMEOUT s])
#     GoogleTest executable with tests/mpi_main.cpp, run under mpiexec once per rank count
#     (oversubscribed; one OpenMP thread per rank).
set(PLEXUS_MPI_ENV
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
  OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  PLEXUS_PLUGIN_PATH=)

function(plexus_add_unit_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${name} ${T_SOURCES} ${PROJECT_SOURCE_DIR}/tests/mpi_main.cpp)
  target_link_libraries(${name} PRIVATE plexus::core GTest::gtest plexus_warnings ${T_LIBRARIES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS unit
    ENVIRONMENT "OMP_NUM_THREADS=2;${PLEXUS_MPI_ENV}")
endfunction()

function(plexus_add_mpi_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBRARIES;RANKS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${name} ${T_SOURCES} ${PROJECT_SOURCE_DIR}/tests/mpi_main.cpp)
  target_link_libraries(${name} PRIVATE plexus::core GTest::gtest plexus_warnings ${T_LIBRARIES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  foreach(np ${T_RANKS})
    add_test(NAME ${name}_np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe ${MPIEXEC_PREFLAGS}
              $<TARGET_FILE:${name}> ${MPIEXEC_POSTFLAGS})
    set_tests_properties(${name}_np${np} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS mpi PROCESSORS 2
      ENVIRONMENT "OMP_NUM_THREADS=1;${PLEXUS_MPI_ENV}")
  endforeach()
endfunction()
