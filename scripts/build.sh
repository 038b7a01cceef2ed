#!/usr/bin/env bash
# Installs missing Debian packages, configures and builds plexus in $PLEXUS_BUILD_DIR (default build/).
# Extra arguments go to the CMake configure step (e.g. -DPLEXUS_ENABLE_CUDA=OFF).
# PLEXUS_INSTALL_DEPS=0 skips the packages (no root needed): CMake then finds the dependencies
# where the system and CMAKE_PREFIX_PATH (environment or -D) say (docs/building.md).
# PLEXUS_BUILD_TARGET=T builds only target T (and what it needs); default: everything.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
bash "$PLEXUS_ROOT/scripts/install-deps.sh"
cmake -S "$PLEXUS_ROOT" -B "$PLEXUS_BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$PLEXUS_BUILD_DIR" -j "$PLEXUS_JOBS" ${PLEXUS_BUILD_TARGET:+--target "$PLEXUS_BUILD_TARGET"}
