#!/usr/bin/env bash
# Installs the Debian packages plexus builds against, when any is missing.
# Idempotent and quiet when everything is already there. Uses sudo when not root.
#   scripts/install-deps.sh           the build's packages (what CI installs)
#   scripts/install-deps.sh --plots   those and python3-matplotlib, for bench/cg_bands_plot.py and paper_figures.py
# PLEXUS_INSTALL_DEPS=0 skips it (scripts/build.sh, test.sh and demo.sh call it): for builds
# whose dependencies come from elsewhere (environment modules, Spack, a prefix of your own, given
# to CMake by CMAKE_PREFIX_PATH; docs/building.md), or without root.
set -euo pipefail

if [ "${PLEXUS_INSTALL_DEPS:-1}" = 0 ]; then
  echo "install-deps: skipped (PLEXUS_INSTALL_DEPS=0): CMake finds the dependencies (CMAKE_PREFIX_PATH; docs/building.md)"
  exit 0
fi
# Said whenever this script cannot do its job: what to do instead.
how_else() {
  echo "install-deps: install them another way, or take the dependencies from elsewhere (environment modules," >&2
  echo "install-deps: Spack, a prefix in CMAKE_PREFIX_PATH) and skip this step with PLEXUS_INSTALL_DEPS=0, e.g." >&2
  echo "install-deps:   PLEXUS_INSTALL_DEPS=0 bash scripts/build.sh      (docs/building.md)" >&2
}

PACKAGES=(
  build-essential cmake pkg-config
  libopenmpi-dev openmpi-bin
  libtrilinos-teuchos-dev libtrilinos-kokkos-dev
  libboost-dev libboost-filesystem-dev
  libspdlog-dev libgtest-dev
  libopenblas-dev liblapack-dev libxsmm-dev
  zlib1g-dev libdeflate-dev nlohmann-json3-dev
  libfftw3-dev libfftw3-mpi-dev libhdf5-openmpi-dev
  clang libclang-rt-14-dev libomp-dev lld  # the sanitizer and fuzz build of scripts/test.sh (libFuzzer, clang's OpenMP, its linker)
  iproute2 python3  # the emulated network (bench/shaped_network.sh: ip, tc) and its volume test
  libdbcsr-dev gfortran  # the optional comm_dbcsr plugin (DBCSR's own multiply; linking it needs Fortran)
  fypp  # DBCSR's preprocessor, for bench/build_dbcsr.sh (DBCSR with libxsmm) and its test
)

for arg in "$@"; do
  case "$arg" in
    --plots) PACKAGES+=(python3-matplotlib) ;;  # the benchmark plots (bench/cg_bands_plot.py, bench/paper_figures.py plot)
    *) echo "install-deps: unknown option '$arg' (known: --plots)" >&2; exit 2 ;;
  esac
done

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: no dpkg-query or apt-get here (not Debian-like): the Debian packages cannot be checked or installed." >&2
  how_else
  exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-deps: missing Debian packages: ${missing[*]}" >&2
    echo "install-deps: not root and no sudo: they cannot be installed from here." >&2
    how_else
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get update -qq ||
   ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  echo "install-deps: apt-get could not install: ${missing[*]}" >&2
  how_else
  exit 1
fi
echo "install-deps: done"
