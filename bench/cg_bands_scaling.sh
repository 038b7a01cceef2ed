#!/usr/bin/env bash
# The cg_bands scaling figure of issue 12 (Hoefler, Rehm and Janisch, Figures 3-4): time per sweep
# of the band-by-band CG on a 64-atom silicon supercell against the rank count, split into local
# compute, allreduce and all-to-all time, next to the LogGP prediction of the communication; the
# paper's scheme (BatchReductions=false) and batched projections (true). One JSON file out.
#
#   bench/cg_bands_scaling.sh [--ecut E] [--sweeps N] [--ranks "1 2 4 8 16"] [--batch "false true"]
#                             [--supercell 2,2,2] [--max-busy X] [--wait-minutes M] [--out FILE]
#
# Every run: mpiexec -n P --oversubscribe plexus run --set Solver=cg_bands ... --json, with
# OMP_NUM_THREADS=1 and the Open MPI settings of scripts/env.sh. Before each run the script waits
# (up to --wait-minutes) until the machine is quiet: the mean number of runnable tasks other than
# the sampler (4th field of /proc/loadavg, 5 samples 1 s apart) below --max-busy (default 0.7).
# The 1-minute load average is not used as the gate, because this script's own previous run (up to
# 16 busy ranks) keeps it high for minutes; it is recorded before and after each run all the same.
# See bench/README.md and docs/cg_bands-bench.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../scripts/env.sh
source "$here/../scripts/env.sh"

orig_args="$*"
ecut=6
sweeps=3
ranks="1 2 4 8 16"
batches="false true"
supercell="2,2,2"
max_busy=0.7
wait_minutes=20
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ecut) ecut="$2"; shift 2 ;;
    --sweeps) sweeps="$2"; shift 2 ;;
    --ranks) ranks="$2"; shift 2 ;;
    --batch) batches="$2"; shift 2 ;;
    --supercell) supercell="$2"; shift 2 ;;
    --max-busy) max_busy="$2"; shift 2 ;;
    --wait-minutes) wait_minutes="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cg_bands_scaling: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done

plexus="$PLEXUS_BUILD_DIR/bin/plexus"
[ -x "$plexus" ] || { echo "cg_bands_scaling: $plexus not found: build first (PLEXUS_BUILD_DIR)" >&2; exit 1; }
[ -n "$out" ] || out="$PLEXUS_ROOT/bench/results/cg_bands/scaling-si${supercell//,/x}-ecut${ecut}-sweeps${sweeps}.json"
mkdir -p "$(dirname "$out")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# shellcheck source=quiet.sh
source "$here/quiet.sh"

runs=()
start=$SECONDS
for p in $ranks; do
  for batch in $batches; do
    file="$work/run-p$p-batch$batch.json"
    b=$(wait_quiet cg_bands_scaling)
    load0=$(cut -d' ' -f1 /proc/loadavg)
    t0=$(date +%s.%N)
    cmd=(mpiexec -n "$p" --oversubscribe -x OMP_NUM_THREADS=1 "$plexus" run --log-level warn --no-params-file
         --set Solver=cg_bands --set "cg_bands/Supercell=$supercell" --set "cg_bands/Ecut=$ecut"
         --set "cg_bands/MaxSweeps=$sweeps" --set cg_bands/KeepUnconverged=true
         --set "cg_bands/BatchReductions=$batch" --set Timing/WarmUp=0 --json "$file")
    echo "cg_bands_scaling: P=$p BatchReductions=$batch (runnable $b, load $load0)" >&2
    OMP_NUM_THREADS=1 "${cmd[@]}" > "$work/run-p$p-batch$batch.log" 2>&1 || {
      echo "cg_bands_scaling: the run failed:" >&2; cat "$work/run-p$p-batch$batch.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    load1=$(cut -d' ' -f1 /proc/loadavg)
    printf '%s\n' "$p" "$batch" "$file" "$b" "$load0" "$load1" "$t0" "$t1" "${cmd[*]}" > "$work/meta-p$p-batch$batch"
    runs+=("$work/meta-p$p-batch$batch")
  done
done

/usr/bin/env python3 - "$out" "$orig_args" "$SECONDS" "$start" "${runs[@]}" <<'EOF'
import json, os, platform, socket, subprocess, sys, time
out, args, now, start, metas = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
keys = ["seconds_per_sweep", "compute_seconds_per_sweep", "allreduce_seconds_per_sweep",
        "alltoall_seconds_per_sweep", "communication_seconds_per_sweep",
        "predicted_allreduce_seconds_per_sweep", "predicted_alltoall_seconds_per_sweep",
        "predicted_communication_seconds_per_sweep", "saturation_ranks", "saturation_sweep_seconds",
        "cg_allreduces_per_sweep", "other_allreduces_per_sweep", "eq24_allreduces_per_sweep",
        "alltoalls_per_sweep", "alltoall_bytes_per_pair", "npw", "atoms", "bands", "sticks", "sweeps",
        "max_residual", "lowest_eigenvalue", "logp_L", "logp_o", "logp_g", "logp_G"]
rows = []
for m in metas:
    p, batch, file, busy, load0, load1, t0, t1, cmd = open(m).read().split("\n")[:9]
    run = json.load(open(file))
    fig = run.get("figures", {})
    hist = run.get("history", [])
    row = {"ranks": int(p), "batch_reductions": batch == "true", "command": cmd,
           "runnable_before": float(busy), "load_average_1min_before": float(load0),
           "load_average_1min_after": float(load1), "wall_seconds": float(t1) - float(t0)}
    row.update({k: fig.get(k) for k in keys})
    row["fft_box"] = run.get("series", {}).get("fft_box")
    row["history"] = hist
    # The sweeps after the first (its warm-up: first touches, FFTW's first executions), from the
    # history (rank 0's times; the figures above are every sweep's mean, the slowest rank's).
    later = [h for h in hist if h.get("sweep", 0) > 1]
    if later:
        n = len(later)
        row["later_sweeps"] = {
            "sweeps": n,
            "seconds_per_sweep": sum(h["seconds"] for h in later) / n,
            "compute_seconds_per_sweep": sum(h["compute_seconds"] for h in later) / n,
            "allreduce_seconds_per_sweep": sum(h["allreduce_seconds"] for h in later) / n,
            "alltoall_seconds_per_sweep": sum(h["alltoall_seconds"] for h in later) / n}
    rows.append(row)
def first_line(path, key):
    try:
        for line in open(path):
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""
try:
    mpi = subprocess.run(["mpiexec", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
except Exception:
    mpi = ""
try:
    commit = subprocess.run(["git", "-C", os.environ.get("PLEXUS_ROOT", "."), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
except Exception:
    commit = ""
doc = {"benchmark": "cg_bands_scaling.sh",
       "command": "bench/cg_bands_scaling.sh " + args,
       "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
       "commit": commit,
       "total_seconds": now - start,
       "machine": {"hostname": socket.gethostname(), "kernel": platform.platform(),
                   "cpu_model": first_line("/proc/cpuinfo", "model name"), "online_cpus": os.cpu_count(),
                   "memory_total": first_line("/proc/meminfo", "MemTotal"), "mpi": mpi,
                   "mpi_environment": {k: v for k, v in os.environ.items() if k.startswith("OMPI_MCA_")},
                   "omp_num_threads": 1},
       "what": "per run: the solver's figures (per sweep: the mean over every sweep of the slowest rank's "
               "time; compute = sweep - allreduce - all-to-all; predicted_*: LogGP, parameters measured on "
               "ranks 0 and 1 before the first sweep), its history rows, and later_sweeps: rank 0's mean "
               "over the sweeps after the first",
       "runs": rows}
json.dump(doc, open(out, "w"), indent=2)
print("cg_bands_scaling: wrote", out, file=sys.stderr)
for r in rows:
    print("P=%2d batch=%-5s sweep %.3f s: compute %.3f, allreduce %.3f, all-to-all %.3f; predicted %.3f + %.3f" % (
        r["ranks"], str(r["batch_reductions"]).lower(), r["seconds_per_sweep"] or 0,
        r["compute_seconds_per_sweep"] or 0, r["allreduce_seconds_per_sweep"] or 0,
        r["alltoall_seconds_per_sweep"] or 0, r["predicted_allreduce_seconds_per_sweep"] or 0,
        r["predicted_alltoall_seconds_per_sweep"] or 0))
EOF
