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

busy() {
  local sum=0 r
  for _ in 1 2 3 4 5; do
    read -r _ _ _ r _ < /proc/loadavg  # a builtin: only this shell runs while it reads
    sum=$((sum + ${r%%/*} - 1))
    sleep 1
  done
  awk -v s="$sum" 'BEGIN { printf "%.2f", s / 5 }'
}
wait_quiet() {
  local deadline=$((SECONDS + 60 * wait_minutes)) b
  while :; do
    b=$(busy)
    if awk -v b="$b" -v m="$max_busy" 'BEGIN { exit !(b < m) }'; then return 0; fi
    if [ $SECONDS -ge $deadline ]; then
      echo "cg_bands_fft: the machine stayed busy ($b runnable) for $wait_minutes min; measuring anyway" >&2
      return 0
    fi
    echo "cg_bands_fft: busy ($b runnable tasks, load $(cut -d' ' -f1 /proc/loadavg)); waiting" >&2
    sleep 30
  done
}

for cell in $cells; do
  for p in $ranks; do
    wait_quiet
    out="$outdir/fft-si${cell//,/x}-ecut${ecut}${tag}-p$p.json"
    OMP_NUM_THREADS=1 mpiexec -n "$p" --oversubscribe -x OMP_NUM_THREADS=1 "$bench" --supercell "$cell" \
      --ecut "$ecut" --repetitions "$reps" --json "$out" --check "${extra[@]}" 2>&1 || {
      echo "cg_bands_fft: the run failed (P=$p, Si $cell)" >&2; exit 1; }
  done
done
