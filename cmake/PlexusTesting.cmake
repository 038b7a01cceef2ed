# Helpers for the test suites.
#   plexus_add_unit_test(<name> SOURCES <files> [LIBRARIES <libs>] [TIMEOUT s] [SHARDS n]
#                        [ENVIRONMENT VAR=value...])
#     one-rank GoogleTest executable, run directly by CTest (OMP_NUM_THREADS=2); with SHARDS, as n
#     tests <name>_shard0 ... (GoogleTest's sharding).
#   plexus_add_mpi_test(<name> SOURCES <files> RANKS <n...> [LIBRARIES <libs>] [TIMEOUT s])
#     GoogleTest executable with tests/mpi_main.cpp (plexus_test_main), run under mpiexec once per rank count
#     (oversubscribed; one OpenMP thread per rank). Runs on more than 8 ranks are also labelled
#     large-ranks.
# odls_base_sigkill_timeout=0: when a rank exits non-zero (some 70 tests check error exits),
# mpiexec ends the others at once instead of waiting 1 s before SIGTERM and 1 s more before
# SIGKILL; the exit status and the messages are the same, and the two runs of the suite in
# .ci/run are 2 x ~2 minutes shorter.
# pml=ob1: the PML every test job ends up with anyway, named so that no other is opened. cm opens
# its MTLs (PSM, PSM2, OFI), which look for a fabric at every MPI_Init: 0.2 s of each launch on one
# node (0.37 -> 0.17 s for two ranks that only MPI_Init and exit); "^cm" (stop 50) left ucx, which
# loads UCX's libraries and fails to initialise on every rank here: 1.66 -> 1.42 s for sixteen
# such ranks (stop 70). ob1 is what runs the emulated network's TCP too (tests/net). About 650
# launches per .ci/run.
# OMP_WAIT_POLICY=passive: OpenMP threads that wait at a barrier sleep instead of spinning. The
# tests oversubscribe (ranks x threads beyond the two cores), and a spinning thread takes the core
# from the thread it waits for: the mirror kernel's multiply conformance on 3 ranks took 16.7 s
# with libgomp's default wait (73 % of rank 0's samples in its spin loop), 2.6 s with this.
# orte_top_session_dir: every job's Open MPI session directory (pid.<N>/, its contact file and
# the ranks' directories) goes into one directory of the build that always holds `keep/`, so Open
# MPI never creates or removes it. By default the top directory is /tmp/ompi.<host>.<uid>, made by
# the first job that starts and removed by the last that ends while it is empty; a job starting
# while another removes it fails in orte_init ("A call to mkdir was unable to create the desired
# directory ... File exists", then MPI_Init aborts): two singletons started together did so in one
# suite run of stop 67 (g4_diff_agree beside g4_diff_differs). The shared-memory backing files stay
# in /dev/shm (btl_vader and osc_sm's backing_directory).
set(PLEXUS_MPI_SESSION_DIR ${PROJECT_BINARY_DIR}/mpi-session)
file(MAKE_DIRECTORY ${PLEXUS_MPI_SESSION_DIR}/keep)
set(PLEXUS_MPI_ENV
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
  OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  OMPI_MCA_odls_base_sigkill_timeout=0 OMPI_MCA_pml=ob1 OMP_WAIT_POLICY=passive PLEXUS_PLUGIN_PATH=
  OMPI_MCA_orte_top_session_dir=${PLEXUS_MPI_SESSION_DIR} ${PLEXUS_SANITIZER_ENV})

# In a sanitizer build (cmake/PlexusSanitizers.cmake) a sanitizer report fails the test whatever
# its exit code.
function(plexus_fail_on_sanitizer_reports)
  if(PLEXUS_SANITIZER_FAIL_REGEX)
    set_tests_properties(${ARGN} PROPERTIES FAIL_REGULAR_EXPRESSION "${PLEXUS_SANITIZER_FAIL_REGEX}")
  endif()
endfunction()

function(plexus_add_unit_test name)
  cmake_parse_arguments(T "" "TIMEOUT;SHARDS" "SOURCES;LIBRARIES;ENVIRONMENT" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE plexus_test_main plexus::core GTest::gtest plexus_warnings ${T_LIBRARIES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  # SHARDS n: n tests ${name}_shard<i>, GoogleTest's own sharding (each case in exactly one), so
  # that a long suite's cases run on both cores beside the other tests.
  set(shards 1)
  if(T_SHARDS)
    set(shards ${T_SHARDS})
  endif()
  math(EXPR last "${shards} - 1")
  foreach(i RANGE ${last})
    set(test ${name})
    set(env OMP_NUM_THREADS=2 ${PLEXUS_MPI_ENV} ${T_ENVIRONMENT})
    if(T_SHARDS)
      set(test ${name}_shard${i})
      list(APPEND env GTEST_TOTAL_SHARDS=${T_SHARDS} GTEST_SHARD_INDEX=${i})
    endif()
    add_test(NAME ${test} COMMAND ${name})
    set_tests_properties(${test} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS unit ENVIRONMENT "${env}")
    plexus_fail_on_sanitizer_reports(${test})
  endforeach()
endfunction()

function(plexus_add_mpi_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBRARIES;RANKS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE plexus_test_main plexus::core GTest::gtest plexus_warnings ${T_LIBRARIES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  foreach(np ${T_RANKS})
    add_test(NAME ${name}_np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe ${MPIEXEC_PREFLAGS}
              $<TARGET_FILE:${name}> ${MPIEXEC_POSTFLAGS})
    set(labels mpi)
    if(np GREATER 8)
      list(APPEND labels large-ranks)  # left out of the sanitizer run of scripts/test.sh
    endif()
    # One rank takes one core: two such runs may share the machine; more ranks take both.
    set(procs 2)
    if(np EQUAL 1)
      set(procs 1)
    endif()
    set_tests_properties(${name}_np${np} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${labels}" PROCESSORS ${procs}
      ENVIRONMENT "OMP_NUM_THREADS=1;${PLEXUS_MPI_ENV}")
    plexus_fail_on_sanitizer_reports(${name}_np${np})
  endforeach()
endfunction()

# plexus_app_test(<name> [RANKS n] [EXPECT zero|nonzero|<code>] ARGS <args...> [MATCH <regex>...]
#                 [NOMATCH <regex>...] [JSON file rows [keys...]] [JSON_KEYS file path...]
#                 [CSV file rows] [ENV VAR=value...] [UNSET VAR...]
#                 [JSON_COUNTS file key n [key n...]] [JSON_EQUAL file key i j [key i j...]]
#                 [JSON_VALUES file path regex [path regex...]]
#                 [TIMEOUT s] [FIXTURES_SETUP f] [FIXTURES_REQUIRED f])
# Runs `plexus ARGS` (under mpiexec with RANKS ranks when given; PLEXUS_PARAMS_DIR=none: no
# parameter record files unless ENV asks) in ${PLEXUS_APP_TEST_DIR} (set by the caller) through
# tests/app/check_run.cmake, which checks the exit code, that every MATCH regex occurs in the output
# and no NOMATCH one does, that the JSON/CSV files hold `rows` rows, and the JSON_COUNTS /
# JSON_EQUAL facts about the JSON rows, and the JSON_VALUES (see check_run.cmake).
function(plexus_app_test name)
  cmake_parse_arguments(T "" "RANKS;EXPECT;TIMEOUT;FIXTURES_SETUP;FIXTURES_REQUIRED"
                        "ARGS;MATCH;NOMATCH;JSON;CSV;ENV;UNSET;JSON_COUNTS;JSON_EQUAL;JSON_KEYS;JSON_VALUES" ${ARGN})
  if(NOT T_EXPECT)
    set(T_EXPECT zero)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  set(cmd $<TARGET_FILE:plexus> ${T_ARGS})
  if(T_RANKS)
    set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_RANKS} --oversubscribe ${MPIEXEC_PREFLAGS} ${cmd})
  endif()
  # Lists travel to the script joined by a separator that no argument here contains.
  string(REPLACE ";" "<;>" cmd_joined "${cmd}")
  string(REPLACE ";" "<;>" match_joined "${T_MATCH}")
  string(REPLACE ";" "<;>" nomatch_joined "${T_NOMATCH}")
  string(REPLACE ";" "<;>" json_joined "${T_JSON}")
  string(REPLACE ";" "<;>" csv_joined "${T_CSV}")
  string(REPLACE ";" "<;>" json_counts_joined "${T_JSON_COUNTS}")
  string(REPLACE ";" "<;>" json_equal_joined "${T_JSON_EQUAL}")
  string(REPLACE ";" "<;>" json_keys_joined "${T_JSON_KEYS}")
  string(REPLACE ";" "<;>" json_values_joined "${T_JSON_VALUES}")
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${cmd_joined}" "-DEXPECT=${T_EXPECT}" "-DMATCH=${match_joined}"
            "-DNOMATCH=${nomatch_joined}" "-DJSON=${json_joined}" "-DCSV=${csv_joined}"
            "-DJSON_COUNTS=${json_counts_joined}" "-DJSON_EQUAL=${json_equal_joined}"
            "-DJSON_KEYS=${json_keys_joined}" "-DJSON_VALUES=${json_values_joined}"
            -P ${PROJECT_SOURCE_DIR}/tests/app/check_run.cmake
    WORKING_DIRECTORY ${PLEXUS_APP_TEST_DIR})
  # One process (no RANKS, or one rank) takes one core, so two such runs may share the machine
  # (most of an app test's half second is MPI's start-up, not work); more ranks take both.
  set(procs 2)
  if(NOT T_RANKS OR T_RANKS EQUAL 1)
    set(procs 1)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS app PROCESSORS ${procs}
    ENVIRONMENT "OMP_NUM_THREADS=1;PLEXUS_PARAMS_DIR=none;${PLEXUS_MPI_ENV};${T_ENV}")
  # UNSET: variables removed from the run's environment (an empty value is not the same: LLVM's OpenMP
  # runtime aborts on an empty OMP_NUM_THREADS).
  set(unset ${T_UNSET})
  list(TRANSFORM unset APPEND "=unset:")
  if(unset)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT_MODIFICATION "${unset}")
  endif()
  plexus_fail_on_sanitizer_reports(${name})
  if(T_FIXTURES_SETUP)
    set_tests_properties(${name} PROPERTIES FIXTURES_SETUP ${T_FIXTURES_SETUP})
  endif()
  if(T_FIXTURES_REQUIRED)
    set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED ${T_FIXTURES_REQUIRED})
  endif()
endfunction()
