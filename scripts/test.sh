#!/usr/bin/env bash
# Set up, build, and run every test (unit, MPI on 1-16 ranks, end-to-end), as CI does.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
bash "$PLEXUS_ROOT/scripts/build.sh" -DPLEXUS_BUILD_TESTS=ON
cd "$PLEXUS_BUILD_DIR"
ctest --output-on-failure -j "$PLEXUS_JOBS" "$@"
