#!/usr/bin/env bash
# The main job: set up, build, then compare strategies on the built-in default problem
# (H2O-like: blocks of 23, about 10 % occupancy) on 4 MPI ranks and print the table.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
# Only what the job runs: the program and the plugins shipped with it (no tests, no benchmarks).
PLEXUS_BUILD_TARGET=plexus bash "$PLEXUS_ROOT/scripts/build.sh"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
mpiexec --oversubscribe -n "${PLEXUS_RANKS:-4}" "$PLEXUS_BUILD_DIR/bin/plexus" compare \
  --strategies cannon,rma25d,rma25d:Layers=4 --kernels cpu,reference \
  --csv "$PLEXUS_BUILD_DIR/compare.csv" --json "$PLEXUS_BUILD_DIR/compare.json" "$@"
echo "table also written to $PLEXUS_BUILD_DIR/compare.csv and compare.json"
