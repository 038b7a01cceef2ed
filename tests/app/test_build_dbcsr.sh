#!/usr/bin/env bash
# bench/build_dbcsr.sh without DBCSR's source: bad input is refused (exit 2) before anything is
# written, a stand-in source tree (a CMake project named dbcsr that installs a package file) goes
# through configure, build and install, and a tree whose configure fails ends with exit 1 and the
# end of its log. Usage: test_build_dbcsr.sh <repository root> <scratch directory>
set -uo pipefail
root="$1"
scratch="$2"
script="$root/bench/build_dbcsr.sh"
rm -rf "$scratch"
mkdir -p "$scratch"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# run <expected exit code> <regex the output must hold> -- <arguments>
run() {
  local want="$1" pattern="$2"
  shift 3
  local out rc
  out="$(bash "$script" "$@" 2>&1)"
  rc=$?
  echo "---- build_dbcsr.sh $* -> $rc"
  echo "$out" | tail -n 5
  [ "$rc" = "$want" ] || fail "build_dbcsr.sh $*: exit $rc, expected $want"
  echo "$out" | grep -Eq -- "$pattern" || fail "build_dbcsr.sh $*: no '$pattern' in its output"
}

fake="$scratch/fake-dbcsr"
mkdir -p "$fake"
printf 'MAJOR = 9\nMINOR = 8\nPATCH = 7\n' >"$fake/VERSION"
cat >"$fake/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
# A stand-in for DBCSR's source tree (its project() spans lines, as DBCSR's does).
project(
  dbcsr
  LANGUAGES NONE)
file(WRITE ${CMAKE_BINARY_DIR}/DBCSRConfig.cmake "set(DBCSR_VERSION 9.8.7 \"${USE_SMM}\")\n")
install(FILES ${CMAKE_BINARY_DIR}/DBCSRConfig.cmake DESTINATION lib/cmake/dbcsr)
EOF
broken="$scratch/broken-dbcsr"
mkdir -p "$broken"
cp "$fake/VERSION" "$broken/"
printf 'cmake_minimum_required(VERSION 3.16)\nproject(dbcsr LANGUAGES NONE)\nmessage(FATAL_ERROR "stand-in configure failure")\n' \
  >"$broken/CMakeLists.txt"
other="$scratch/other-project"
mkdir -p "$other"
cp "$fake/VERSION" "$other/"
printf 'cmake_minimum_required(VERSION 3.16)\nproject(other LANGUAGES NONE)\n' >"$other/CMakeLists.txt"
mkdir -p "$scratch/full" "$scratch/full-build"
echo keep >"$scratch/full/keep.txt"
echo keep >"$scratch/full-build/keep.txt"

run 0 "^Options:" -- --help
run 2 "--source DIR is required" --
run 2 "--prefix DIR is required" -- --source "$fake"
run 2 "is not DBCSR's source tree" -- --source "$other" --prefix "$scratch/p-other"
run 2 "is not a directory" -- --source "$scratch/none" --prefix "$scratch/p-none"
run 2 "--smm must be libxsmm or blas" -- --source "$fake" --prefix "$scratch/p-smm" --smm mkl
run 2 "--jobs must be a positive whole number" -- --source "$fake" --prefix "$scratch/p-jobs" --jobs 0
run 2 "unknown option '--prefx'" -- --source "$fake" --prefx "$scratch/p-typo"
run 2 "--prefix '.*/full' exists and is not empty" -- --source "$fake" --prefix "$scratch/full"
run 2 "--plexus-build '.*/full-build' exists and is not empty" -- --source "$fake" --prefix "$scratch/p-pb" \
  --plexus-build "$scratch/full-build"
for p in p-other p-none p-smm p-jobs p-typo p-pb; do
  [ ! -e "$scratch/$p" ] || fail "a refused run created $scratch/$p"
done
if [ "$(ls -A "$scratch/full")" != keep.txt ] || [ "$(cat "$scratch/full/keep.txt")" != keep ]; then
  fail "a refused run touched $scratch/full"
fi
[ "$(ls -A "$scratch/full-build")" = keep.txt ] || fail "a refused run touched $scratch/full-build"

# The whole path on the stand-in (blas: no libxsmm module needed) needs the tools the script
# checks for; without them (a build with PLEXUS_INSTALL_DEPS=0 and no Fortran), the refusals above
# are all this test can check, and it says it skipped the rest.
missing=()
for tool in cmake make gfortran mpifort fypp pkg-config; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "SKIP: the refusals passed; the configure, build and install need: ${missing[*]}"
  exit 0
fi
run 0 "DBCSR 9\.8\.7 installed in .*/p-ok" -- --source "$fake" --prefix "$scratch/p-ok" --smm blas --jobs 1
[ -f "$scratch/p-ok/lib/cmake/dbcsr/DBCSRConfig.cmake" ] || fail "no package file installed under p-ok"
grep -q '"blas"' "$scratch/p-ok/lib/cmake/dbcsr/DBCSRConfig.cmake" 2>/dev/null || fail "USE_SMM=blas did not reach the configure"
[ ! -e "$scratch/p-ok/build-dbcsr" ] || fail "the build directory was left without --keep-build"
[ -s "$scratch/p-ok/build_dbcsr.log" ] || fail "no build log kept in the prefix"
run 0 "installed in .*/p-keep" -- --source "$fake" --prefix "$scratch/p-keep" --smm blas --keep-build
[ -d "$scratch/p-keep/build-dbcsr" ] || fail "--keep-build did not keep the build directory"
# A configure that fails: exit 1, the end of its log, where the whole log is.
run 1 "stand-in configure failure" -- --source "$broken" --prefix "$scratch/p-broken" --smm blas
run 1 "the whole log: .*/p-broken/build-dbcsr/build.log" -- --source "$broken" --prefix "$scratch/p-broken" \
  --smm blas --force

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
