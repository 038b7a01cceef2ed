#!/usr/bin/env bash
# Set up, build, and run every test (unit, MPI on 1-16 ranks, end-to-end), as CI does. Then, unless
# PLEXUS_SANITIZE_TESTS=0, the sanitizer and fuzz build: clang with -fsanitize=address,undefined
# (cmake/PlexusSanitizers.cmake) and libFuzzer (PLEXUS_FUZZ=ON) in $PLEXUS_BUILD_DIR-sanitize-clang
# (no benchmarks), built at nice 19 while the normal tests run, and there:
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

sanitize="${PLEXUS_SANITIZE_TESTS:-1}"
# -O1 -g1: stacks with file:line (clang's -Og is -O1). No comm_dbcsr in the sanitizer build: DBCSR is
# an uninstrumented Fortran library, and the normal build tests the plugin. No cuda plugin either
# (nvcc code is not instrumented; the cuda kernel's host side is, on the emulated device of
# tests/kernels).
san_flags="-O1 -g1 -DNDEBUG"
san_dir="$PLEXUS_BUILD_DIR-sanitize-clang"
san_log="$san_dir/build.log"
san_pid=
# The sanitizer build runs beside the normal tests, at the lowest priority (nice 19): the tests
# leave about a sixth of the two cores idle (MPI start-up, ranks that wait on one another), and
# the build takes that time without taking the tests' (docs/building.md). In a process group of its
# own (set -m), so that its compilers end with it when the script stops early (a failed test,
# Ctrl-C). Not in a session of its own (setsid): with the kernel's autogroups, a new session is
# a new scheduling group, which shares the cores equally with the tests' whatever its nice value
# (the tests took twice as long).
stop_san_build() {
  if [ -n "$san_pid" ] && kill -0 "$san_pid" 2>/dev/null; then
    kill -TERM -- "-$san_pid" 2>/dev/null || true
    wait "$san_pid" 2>/dev/null || true
  fi
}
trap stop_san_build EXIT
trap 'exit 130' INT TERM
if [ "$sanitize" != 0 ]; then
  mkdir -p "$san_dir"
  echo "test.sh: the sanitizer build runs beside the tests at nice 19 (its log: $san_log)"
  set -m
  nice -n 19 bash -c '
    set -e
    CC=clang CXX=clang++ cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$3" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$3" \
      -DPLEXUS_BUILD_TESTS=ON -DPLEXUS_BUILD_BENCH=OFF -DPLEXUS_SANITIZE=address,undefined -DPLEXUS_FUZZ=ON \
      -DPLEXUS_ENABLE_DBCSR=OFF -DPLEXUS_ENABLE_CUDA=OFF
    cmake --build "$2" -j "$4"' san_build "$PLEXUS_ROOT" "$san_dir" "$san_flags" "$PLEXUS_JOBS" \
    > "$san_log" 2>&1 < /dev/null &
  san_pid=$!
  set +m
fi

(cd "$PLEXUS_BUILD_DIR" && ctest --output-on-failure -j "$PLEXUS_JOBS" "$@")
phase "tests passed"

if [ "$sanitize" = 0 ]; then
  echo "test.sh: PLEXUS_SANITIZE_TESTS=0: the sanitizer and fuzz build skipped"
  exit 0
fi

echo "test.sh: waiting for the sanitizer build"
san_status=0
wait "$san_pid" || san_status=$?
san_pid=
echo "test.sh: the sanitizer build's log ($san_log):"
cat "$san_log"
if [ "$san_status" != 0 ]; then
  echo "test.sh: the sanitizer build failed (exit status $san_status): its log is above" >&2
  exit 1
fi
phase "sanitizer build done"
# Excluding a fixture's setup test breaks the tests that need it: exclude those too
# (app_cg_bands_logp_file reads the file app_logp_for_cg_bands writes).
(cd "$san_dir" && ctest --output-on-failure -j "$PLEXUS_JOBS" -LE 'large-ranks|h2o-long|net' \
  -E '^(test_mpi_multiply_conformance_np[68]|test_mpi_multiply_conformance_mirror_np4|test_cg_bands_np[468]|test_density_model_np4|app_compare_cg_bands_collectives|app_cg_bands_nboverlap_collectives|app_logp_for_cg_bands|app_cg_bands_logp_file|third_party_strategy|third_party_strategy_build_tree)$')
phase "sanitizer tests and fuzz runs passed"
