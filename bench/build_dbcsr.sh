#!/usr/bin/env bash
# Builds DBCSR from its public source with libxsmm as its small-matrix backend (what CP2K users
# run), installs it under a prefix, and optionally builds plexus against it, so that the `dbcsr`
# strategy of that plexus build is this DBCSR instead of Debian's (which multiplies its blocks
# with BLAS). bench/scaling_bench.py --build <that plexus build> --baseline build then puts both
# DBCSRs beside cannon in one run (bench/README.md, "Against a DBCSR built with libxsmm").
#
#   bench/build_dbcsr.sh --source DIR --prefix DIR [--smm libxsmm|blas] [--plexus-build DIR]
#                        [--jobs N] [--keep-build]
#
# Nothing is downloaded: --source is a DBCSR checkout, e.g.
#   git clone --branch v2.5.0 https://github.com/cp2k/dbcsr.git dbcsr-2.5.0
# (2.5.0 is Debian 12's version; docs/performance.md's figures used it). Every input is checked
# before anything is written. Needs cmake, gfortran, MPI's Fortran wrapper, fypp and, for
# libxsmm, Debian's libxsmm-dev: `bash scripts/install-deps.sh` installs them.
set -euo pipefail

usage() {
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
  cat <<'EOF'

Options:
  --source DIR        DBCSR's source tree (its CMakeLists.txt and VERSION file); required
  --prefix DIR        where DBCSR is installed (lib/cmake/dbcsr); required; must not exist or be
                      empty, unless --force
  --smm KIND          libxsmm (default) or blas: DBCSR's small-matrix backend
  --plexus-build DIR  then configure and build plexus (this checkout, Release, no tests) in DIR
                      against the new DBCSR; DIR must not exist or be empty, unless --force
  --jobs N            parallel build jobs (default: the number of CPUs)
  --keep-build        keep DBCSR's build directory (<prefix>/build-dbcsr) instead of removing it
  --force             allow a non-empty --prefix or --plexus-build (files in them are replaced)
  -h, --help          this text
EOF
}

die() { echo "build_dbcsr: $*" >&2; exit 2; }
fail() { echo "build_dbcsr: $*" >&2; exit 1; }

source_dir="" prefix="" smm="libxsmm" plexus_build="" jobs="$(nproc 2>/dev/null || echo 2)"
keep_build=0 force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --source|--prefix|--smm|--plexus-build|--jobs)
      [ $# -ge 2 ] || die "$1 needs a value (--help)"
      case "$1" in
        --source) source_dir="$2" ;;
        --prefix) prefix="$2" ;;
        --smm) smm="$2" ;;
        --plexus-build) plexus_build="$2" ;;
        --jobs) jobs="$2" ;;
      esac
      shift 2 ;;
    --keep-build) keep_build=1; shift ;;
    --force) force=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (--help)" ;;
  esac
done

# --- every input checked before anything is written ------------------------------------------
[ -n "$source_dir" ] || die "--source DIR is required: a DBCSR checkout (--help)"
[ -n "$prefix" ] || die "--prefix DIR is required: where to install DBCSR (--help)"
case "$smm" in libxsmm|blas) ;; *) die "--smm must be libxsmm or blas, not '$smm'" ;; esac
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive whole number, not '$jobs'"
[ -d "$source_dir" ] || die "--source '$source_dir' is not a directory"
source_dir="$(cd "$source_dir" && pwd)"
if [ ! -f "$source_dir/CMakeLists.txt" ] || [ ! -f "$source_dir/VERSION" ] \
  || ! tr '\n' ' ' <"$source_dir/CMakeLists.txt" | grep -Eqi 'project *\( *dbcsr'; then
  die "--source '$source_dir' is not DBCSR's source tree (no CMakeLists.txt with project(dbcsr ...) and VERSION)"
fi
version="$(awk -F'= *' '/^MAJOR/{a=$2} /^MINOR/{b=$2} /^PATCH/{c=$2} END{print a"."b"."c}' "$source_dir/VERSION")"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "cannot read DBCSR's version from '$source_dir/VERSION'"

not_empty() { [ -e "$1" ] && { [ ! -d "$1" ] || [ -n "$(ls -A "$1")" ]; }; }
if not_empty "$prefix" && [ "$force" = 0 ]; then
  die "--prefix '$prefix' exists and is not empty; give another or --force"
fi
[ ! -e "$prefix" ] || [ -d "$prefix" ] || die "--prefix '$prefix' exists and is not a directory"
if [ -n "$plexus_build" ]; then
  if not_empty "$plexus_build" && [ "$force" = 0 ]; then
    die "--plexus-build '$plexus_build' exists and is not empty; give another or --force"
  fi
  [ ! -e "$plexus_build" ] || [ -d "$plexus_build" ] || die "--plexus-build '$plexus_build' exists and is not a directory"
fi

missing=()
for tool in cmake make gfortran mpifort fypp pkg-config; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] || fail "missing: ${missing[*]} (Debian: bash scripts/install-deps.sh)"
# DBCSR runs its preprocessor as "<Python_EXECUTABLE> <fypp>", with the first python3 in PATH
# unless told. Debian's fypp is a package of the system's Python, which another interpreter first
# in PATH (a pyenv, a virtual environment) lacks: so the first of these that runs fypp is given.
fypp="$(command -v fypp)"
python=""
for p in /usr/bin/python3 "$(command -v python3 || true)"; do
  if [ -n "$p" ] && [ -x "$p" ] && "$p" "$fypp" --version >/dev/null 2>&1; then
    python="$p"
    break
  fi
done
[ -n "$python" ] || fail "no python3 runs fypp ($fypp) (Debian: apt-get install fypp python3)"
xsmm_mod=""
if [ "$smm" = libxsmm ]; then
  pkg-config --exists libxsmmf libxsmmext \
    || fail "--smm libxsmm: pkg-config finds no libxsmmf/libxsmmext (Debian: apt-get install libxsmm-dev)"
  # DBCSR's Fortran uses libxsmm's module; pkg-config leaves /usr/include out of the flags and
  # DBCSR sets its own Fortran flags, so gfortran would not find it: it goes where DBCSR's
  # modules go.
  xsmm_mod="$(pkg-config --variable=includedir libxsmmf)/libxsmm.mod"
  [ -f "$xsmm_mod" ] || xsmm_mod="$(find /usr/include /usr/local/include -name libxsmm.mod 2>/dev/null | head -n 1)"
  if [ -z "$xsmm_mod" ] || [ ! -f "$xsmm_mod" ]; then
    fail "--smm libxsmm: libxsmm's Fortran module (libxsmm.mod) was not found"
  fi
fi
here="$(cd "$(dirname "$0")/.." && pwd)"

# --- DBCSR ------------------------------------------------------------------------------------
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
build="$prefix/build-dbcsr"  # inside the prefix, which is this script's to fill
rm -rf "$build"
mkdir -p "$build/src"
[ -z "$xsmm_mod" ] || cp "$xsmm_mod" "$build/src/"
log="$build/build.log"
start=$(date +%s)
echo "build_dbcsr: DBCSR $version from $source_dir, small blocks by $smm, into $prefix (log: $log)" >&2
run_logged() {
  if ! "$@" >>"$log" 2>&1; then
    tail -n 30 "$log" >&2
    fail "failed: $* (the whole log: $log)"
  fi
}
echo "build_dbcsr: configuring ..." >&2
# As Debian configures it (static, MPI, OpenMP, the C API), position-independent so that a plexus
# plugin (a shared library) can link it; no examples or tests.
run_logged cmake -S "$source_dir" -B "$build" -DCMAKE_BUILD_TYPE=Release -DUSE_SMM="$smm" \
  -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DUSE_MPI=ON -DUSE_OPENMP=ON \
  -DWITH_C_API=ON -DWITH_EXAMPLES=OFF -DBUILD_TESTING=OFF -DPython_EXECUTABLE="$python" \
  -DCMAKE_INSTALL_PREFIX="$prefix"
echo "build_dbcsr: building with $jobs jobs ($(($(date +%s) - start)) s so far) ..." >&2
run_logged cmake --build "$build" -j "$jobs"
run_logged cmake --install "$build"
[ -f "$prefix/lib/cmake/dbcsr/DBCSRConfig.cmake" ] || [ -n "$(find "$prefix" -name DBCSRConfig.cmake)" ] \
  || fail "DBCSR installed no CMake package under $prefix (the whole log: $log)"
echo "build_dbcsr: DBCSR $version installed in $prefix ($(($(date +%s) - start)) s)" >&2
if [ "$keep_build" = 0 ]; then
  cp "$log" "$prefix/build_dbcsr.log"
  rm -rf "$build"
  log="$prefix/build_dbcsr.log"
fi

# --- plexus against it ------------------------------------------------------------------------
if [ -n "$plexus_build" ]; then
  echo "build_dbcsr: configuring plexus in $plexus_build against it ..." >&2
  run_logged cmake -S "$here" -B "$plexus_build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DPLEXUS_ENABLE_DBCSR=ON -DPLEXUS_BUILD_TESTS=OFF
  grep -q "plexus: DBCSR $version found ($prefix" "$log" \
    || fail "plexus's configuration did not pick the DBCSR in $prefix (the whole log: $log)"
  echo "build_dbcsr: building plexus ($(($(date +%s) - start)) s so far) ..." >&2
  run_logged cmake --build "$plexus_build" -j "$jobs"
  plugin="$plexus_build/lib/plexus/plugins/libplexus_comm_dbcsr.so"
  [ -f "$plugin" ] || fail "plexus's build made no comm_dbcsr plugin ($plugin; the whole log: $log)"
  # DBCSR is linked in statically: its small-matrix calls are in the plugin's symbol table.
  # (grep -c reads all of nm's output: grep -q would end the pipe early, which pipefail reports)
  if [ "$smm" = libxsmm ] && [ "$(nm "$plugin" 2>/dev/null | grep -c 'libxsmm_')" = 0 ]; then
    fail "the comm_dbcsr plugin $plugin does not contain libxsmm's functions"
  fi
  echo "build_dbcsr: plexus built in $plexus_build with DBCSR $version ($smm): $plugin" >&2
  echo "build_dbcsr: compare with Debian's DBCSR: GLIBC_TUNABLES=glibc.malloc.hugetlb=1 python3 bench/scaling_bench.py --build $plexus_build --baseline build --strategies cannon,dbcsr" >&2
else
  echo "build_dbcsr: next: cmake -S $here -B <dir> -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=$prefix -DPLEXUS_ENABLE_DBCSR=ON" >&2
fi
echo "build_dbcsr: done in $(($(date +%s) - start)) s" >&2
