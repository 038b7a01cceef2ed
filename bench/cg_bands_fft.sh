#!/usr/bin/env bash
# plexus-fft-bench (cg_bands' plane FFT against fftw_mpi_plan_dft_3d) on the boxes and rank counts
# of issue 12's figure: one JSON file per run in bench/results/cg_bands/fft-si<cell>-ecut<E>-p<P>.json.
#
#   bench/cg_bands_fft.sh [--cells "2,2,2 3,3,3"] [--ecut E] [--ranks "1 2 4 8 16"]
#                         [--repetitions R] [--tag T] [--max-busy X] [--wait-minutes M] [-- extra bench options]
# (--tag T: files fft-si<cell>-ecut<E>-T-p<P>.json, e.g. --tag transposed -- --fftw-transposed)
#
# Before each run it waits, as bench/cg_bands_scaling.sh does, until the mean number of runnable
# tasks other than the sampler is below --max-busy (default 0.7), for up to --wait-minutes (20).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../scripts/env.sh
source "$here/../scripts/env.sh"

cells="2,2,2 3,3,3"
ecut=6
ranks="1 2 4 8 16"
reps=100
tag=""
max_busy=0.7
wait_minutes=20
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cells) cells="$2"; shift 2 ;;
    --ecut) ecut="$2"; shift 2 ;;
    --ranks) ranks="$2"; shift 2 ;;
    --repetitions) reps="$2"; shift 2 ;;
    --tag) tag="-$2"; shift 2 ;;
    --max-busy) max_busy="$2"; shift 2 ;;
    --wait-minutes) wait_minutes="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cg_bands_fft: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

bench="$PLEXUS_BUILD_DIR/bin/plexus-fft-bench"
[ -x "$bench" ] || { echo "cg_bands_fft: $bench not found: build first (PLEXUS_BUILD_DIR)" >&2; exit 1; }
outdir="$PLEXUS_ROOT/bench/results/cg_bands"
mkdir -p "$outdir"

# shellcheck source=quiet.sh
source "$here/quiet.sh"

for cell in $cells; do
  for p in $ranks; do
    wait_quiet cg_bands_fft >/dev/null
    out="$outdir/fft-si${cell//,/x}-ecut${ecut}${tag}-p$p.json"
    OMP_NUM_THREADS=1 mpiexec -n "$p" --oversubscribe -x OMP_NUM_THREADS=1 "$bench" --supercell "$cell" \
      --ecut "$ecut" --repetitions "$reps" --json "$out" --check "${extra[@]}" 2>&1 || {
      echo "cg_bands_fft: the run failed (P=$p, Si $cell)" >&2; exit 1; }
  done
done
