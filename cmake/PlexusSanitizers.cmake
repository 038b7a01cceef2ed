# Sanitizer and fuzzing builds.
#
#   PLEXUS_SANITIZE=address,undefined   every plexus target (core, plugins, solvers, apps, tests,
#                                       bench) is compiled and linked with -fsanitize=<list>,
#                                       -fno-omit-frame-pointer, and -fno-sanitize-recover=undefined
#                                       (UBSan aborts on its first report). Tests get
#                                       PLEXUS_SANITIZER_ENV (ASAN/UBSAN_OPTIONS) and fail on any
#                                       sanitizer report in their output.
#   PLEXUS_FUZZ=ON                      (clang only) tests/fuzz builds libFuzzer targets instead of
#                                       replay drivers, and compiles what they explore (the readers
#                                       and parsers of libplexus_core, plexus_app) with
#                                       -fsanitize=fuzzer-no-link, so libFuzzer sees their coverage.
#                                       The rest (kernels, multiply, solvers, tests) is not: its
#                                       coverage would only slow the tests that share the build
#                                       (scripts/test.sh), 2.3-3.6x for the kernel suite.
#
# Plugins are MODULE libraries dlopen'ed by the executables: they are instrumented like the rest,
# and the sanitizer runtime comes with the executable (g++ links the shared libasan/libubsan into
# every executable and module; clang links its static runtime into executables only, and modules
# resolve its symbols there).
set(PLEXUS_SANITIZE "" CACHE STRING "Sanitizers for every plexus target, e.g. address,undefined (empty: none)")
option(PLEXUS_FUZZ "Build the libFuzzer targets of tests/fuzz (needs clang with libFuzzer)" OFF)

set(PLEXUS_SANITIZER_ENV "")
set(PLEXUS_SANITIZER_LEAK_ENV "")
set(PLEXUS_SANITIZER_FAIL_REGEX "")
if(PLEXUS_SANITIZE)
  set(_plexus_san_flags -fsanitize=${PLEXUS_SANITIZE} -fno-omit-frame-pointer)
  if(PLEXUS_SANITIZE MATCHES "undefined")
    list(APPEND _plexus_san_flags -fno-sanitize-recover=undefined)
  endif()
  # C and C++ only: nvcc does not take them (the cuda plugin's device code is not instrumented;
  # its host side, plexus_cuda_host, is, and the tests run it on the emulated device).
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_plexus_san_flags}>")
  add_link_options(-fsanitize=${PLEXUS_SANITIZE})
  # GCC's -Wmaybe-uninitialized is unreliable on instrumented code (GCC's manual: sanitizers can
  # cause spurious warnings): with ASan it fires inside libstdc++'s <regex>. The normal build keeps
  # the warning.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND TARGET plexus_warnings)
    target_compile_options(plexus_warnings INTERFACE -Wno-maybe-uninitialized)
  endif()
  # clang reports, as a warning, `#pragma omp simd` loops its vectorizer cannot vectorize once
  # instrumented (plugins/kernels_cpu); that says nothing about the code.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND TARGET plexus_warnings)
    target_compile_options(plexus_warnings INTERFACE -Wno-pass-failed)
  endif()
  message(STATUS "plexus: sanitizers: ${PLEXUS_SANITIZE}")

  # LeakSanitizer is off for the tests (detect_leaks=0): Open MPI leaks at exit from components
  # it loads and unloads itself (MPI_Finalize dlcloses them), so those stacks have no module left to
  # name, and no suppression can match them. Targets that never start MPI (tests/fuzz: fuzz_cli,
  # fuzz_xml) turn it on again with PLEXUS_SANITIZER_LEAK_ENV, with the suppressions of
  # tests/sanitizers/lsan.supp.
  set(PLEXUS_SANITIZER_ENV
    "ASAN_OPTIONS=halt_on_error=1:detect_leaks=0"
    "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
  set(PLEXUS_SANITIZER_LEAK_ENV
    "ASAN_OPTIONS=halt_on_error=1:detect_leaks=1"
    "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/sanitizers/lsan.supp:print_suppressions=0")
  # A report fails the test even where the test expects a non-zero exit code.
  set(PLEXUS_SANITIZER_FAIL_REGEX "ERROR: AddressSanitizer" "ERROR: LeakSanitizer" "runtime error: ")
endif()

if(PLEXUS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "PLEXUS_FUZZ=ON needs clang (configure with CC=clang CXX=clang++), "
                        "not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
  check_cxx_source_compiles([[
    #include <cstddef>
    #include <cstdint>
    extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }
  ]] PLEXUS_HAVE_LIBFUZZER)
  unset(CMAKE_REQUIRED_FLAGS)
  if(NOT PLEXUS_HAVE_LIBFUZZER)
    message(FATAL_ERROR "PLEXUS_FUZZ=ON but ${CMAKE_CXX_COMPILER} cannot link -fsanitize=fuzzer "
                        "(Debian: apt-get install clang libclang-rt-14-dev)")
  endif()
  message(STATUS "plexus: libFuzzer targets are built (tests/fuzz)")
endif()
