#!/usr/bin/env bash
# Set up, build, and run every test (unit, MPI on 1-16 ranks, end-to-end), as CI does. Then, unless
# PLEXUS_SANITIZE_TESTS=0, the sanitizer and fuzz build: clang with -fsanitize=address,undefined
# (cmake/PlexusSanitizers.cmake) and libFuzzer (PLEXUS_FUZZ=ON) in $PLEXUS_BUILD_DIR-sanitize-clang
# (no benchmarks), and there:
#   1. a short fixed-seed run of each fuzz target (label libfuzzer; tests/fuzz/README.md);
#   2. the tests except those that add run time but no code (CI has two cores and should finish in
#      about 30 minutes):
#      - the MPI runs on 9, 12 and 16 ranks (label large-ranks: the same code runs on 1 to 8);
#      - the density solvers on the real h2o-32 matrices (label h2o-long: every algorithm runs on
#        the generated problems, Small.* on 1 to 3 ranks and Model.* on 1; the CP2K reader has its
#        fuzz target), and the model problems on 4 ranks;
#      - the multiply conformance suite on 6 and 8 ranks (1 to 4 stay; the mirror kernel's on 1 to
#        3), the cg_bands suite on 4, 6 and 8 (1 to 3 stay), cg_bands' compare and nboverlap
#        program runs and its LogGP fit (the same solver and logp code as other tests);
#      - the emulated-network runs (label net: the harness and the counting, neither instrumented);
#      - the out-of-tree plugin builds (third_party_strategy, third_party_strategy_build_tree: build
#        checks, the same in both builds).
#      Any sanitizer report fails the test.
# One build serves both since 2026-11-29: a g++ sanitizer build and a clang fuzz build took 9-10 and
# about 5 minutes of CI's 36-40 (docs/building.md). Its tests are built with clang, the normal
# build's with g++, so both compilers see all the code.
# Arguments go to the first ctest only (e.g. -R cannon). PLEXUS_INSTALL_DEPS=0: no Debian packages
# installed (scripts/build.sh); the sanitizer build then needs clang with libFuzzer from elsewhere.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
start=$SECONDS
phase() { echo "test.sh: $1 after $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"; }
bash "$PLEXUS_ROOT/scripts/build.sh" -DPLEXUS_BUILD_TESTS=ON
phase "build done"
(cd "$PLEXUS_BUILD_DIR" && ctest --output-on-failure -j "$PLEXUS_JOBS" "$@")
phase "tests passed"

if [ "${PLEXUS_SANITIZE_TESTS:-1}" = 0 ]; then
  echo "test.sh: PLEXUS_SANITIZE_TESTS=0: the sanitizer and fuzz build skipped"
  exit 0
fi

# -O1 -g1: stacks with file:line (clang's -Og is -O1; the test executables at -O0 made the build
# shorter and the tests longer, docs/building.md). No comm_dbcsr in the sanitizer build: DBCSR is
# an uninstrumented Fortran library, and the normal build tests the plugin. No cuda plugin either
# (nvcc code is not instrumented; the cuda kernel's host side is, on the emulated device of
# tests/kernels). The SDK headers' check (PLEXUS_CHECK_HEADERS) is the normal build's.
san_flags="-O1 -g1 -DNDEBUG"
san_dir="$PLEXUS_BUILD_DIR-sanitize-clang"
# LLVM's linker where there is one (install-deps.sh installs it): GNU ld took 36 s to link this
# build's 58 executables and libraries one after another, lld 10 s.
san_link=()
if command -v ld.lld > /dev/null; then
  san_link=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld
            -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld)
fi
CC=clang CXX=clang++ cmake -S "$PLEXUS_ROOT" -B "$san_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${san_link[@]}" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$san_flags" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$san_flags" \
  -DPLEXUS_BUILD_TESTS=ON -DPLEXUS_BUILD_BENCH=OFF -DPLEXUS_SANITIZE=address,undefined -DPLEXUS_FUZZ=ON \
  -DPLEXUS_ENABLE_DBCSR=OFF -DPLEXUS_ENABLE_CUDA=OFF -DPLEXUS_CHECK_HEADERS=OFF
cmake --build "$san_dir" -j "$PLEXUS_JOBS"
phase "sanitizer build done"
# Excluding a fixture's setup test breaks the tests that need it: exclude those too
# (app_cg_bands_logp_file reads the file app_logp_for_cg_bands writes).
(cd "$san_dir" && ctest --output-on-failure -j "$PLEXUS_JOBS" -LE 'large-ranks|h2o-long|net' \
  -E '^(test_mpi_multiply_conformance_np[68]|test_mpi_multiply_conformance_mirror_np4|test_cg_bands_np[468]|test_density_model_np4|app_compare_cg_bands_collectives|app_cg_bands_nboverlap_collectives|app_logp_for_cg_bands|app_cg_bands_logp_file|third_party_strategy|third_party_strategy_build_tree)$')
phase "sanitizer tests and fuzz runs passed"
