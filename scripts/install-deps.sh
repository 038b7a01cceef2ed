#!/usr/bin/env bash
# Installs the Debian packages plexus builds against, when any is missing.
# Idempotent and quiet when everything is already there. Uses sudo when not root.
#   scripts/install-deps.sh           the build's packages (what CI installs)
#   scripts/install-deps.sh --plots   those and python3-matplotlib, for bench/cg_bands_plot.py
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libopenmpi-dev openmpi-bin
  libtrilinos-teuchos-dev libtrilinos-kokkos-dev
  libboost-dev libboost-filesystem-dev
  libspdlog-dev libgtest-dev
  libopenblas-dev liblapack-dev libxsmm-dev
  zlib1g-dev nlohmann-json3-dev
  libfftw3-dev libfftw3-mpi-dev libhdf5-openmpi-dev
  clang libclang-rt-14-dev libomp-dev  # the fuzz build of scripts/test.sh (libFuzzer, clang's OpenMP)
  iproute2 python3  # the emulated network (bench/shaped_network.sh: ip, tc) and its volume test
  libdbcsr-dev gfortran  # the optional comm_dbcsr plugin (DBCSR's own multiply; linking it needs Fortran)
)

for arg in "$@"; do
  case "$arg" in
    --plots) PACKAGES+=(python3-matplotlib) ;;  # the benchmark plots (bench/cg_bands_plot.py)
    *) echo "install-deps: unknown option '$arg' (known: --plots)" >&2; exit 2 ;;
  esac
done

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
    echo "install-deps: missing packages (${missing[*]}) and not root, and sudo is not available." >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
