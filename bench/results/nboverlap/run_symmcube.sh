#!/usr/bin/env bash
# Runs plexus-symmcube-bench on 8 ranks for the sizes committed here and records the conditions:
# `uptime` before and after, and a sample of the other processes every 0.5 s (compilers, other
# MPI jobs and test binaries, CPU-busy processes that are not this run), added to each JSON as
# "run_conditions", with the commit of the source tree (and its parents, for a merge). The machine
# has 2 cores and is shared; read the figures with these.
#
#   bash bench/results/nboverlap/run_symmcube.sh [N:REPS ...]     (default 512:30 1024:30 2048:10)
#   BUILD=build OUT=bench/results/nboverlap bash bench/results/nboverlap/run_symmcube.sh
#   OMPI_MCA_coll_libnbc_ireduce_algorithm=2 SUFFIX=-ireduce-binomial bash .../run_symmcube.sh 1024:30
# (SUFFIX goes into the file name: symmcube-8ranks-n<N><SUFFIX>.json.)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
source "$root/scripts/env.sh"
export OMP_NUM_THREADS=1
build="${BUILD:-$root/build}"
out="${OUT:-$here}"
bin="$build/bin/plexus-symmcube-bench"
[ -x "$bin" ] || { echo "no $bin: cmake --build $build --target plexus-symmcube-bench" >&2; exit 2; }
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(512:30 1024:30 2048:10)

sample() {  # one line per 0.5 s: time, load, compilers, other mpiexec, test binaries, busy others
  local self=$1
  while :; do
    local ps_out
    ps_out="$(ps -eo pid=,ppid=,pcpu=,comm= 2>/dev/null || true)"
    awk -v self="$self" -v t="$(date +%s.%N)" -v load="$(cut -d' ' -f1 /proc/loadavg)" '
      { pid=$1; ppid=$2; cpu=$3; comm=$4; parent[pid]=ppid; name[pid]=comm; pcpu[pid]=cpu }
      END {
        cc=0; mpi=0; tests=0; busy=0;
        for (p in name) {
          mine=0; q=p;
          for (i=0; i<20 && q>1; i++) { if (q==self) { mine=1; break } q=parent[q] }
          if (mine) continue;
          n=name[p];
          if (n ~ /^(cc1plus|cc1|c\+\+|g\+\+|gcc|clang|clang\+\+|ld|ld\.gold|ld\.lld|collect2)$/) cc++;
          else if (n ~ /^(mpiexec|mpirun|orterun|prterun)$/) mpi++;
          else if (n ~ /^(test_|plexus|ctest)/) tests++;
          if (pcpu[p] >= 20 && n != "ps" && n != "awk") busy++;
        }
        printf "%s %s %d %d %d %d\n", t, load, cc, mpi, tests, busy
      }' <<<"$ps_out"
    sleep 0.5
  done
}

for spec in "${specs[@]}"; do
  n="${spec%%:*}"
  reps="${spec##*:}"
  json="$out/symmcube-8ranks-n$n${SUFFIX:-}.json"
  log="$(mktemp)"
  up_before="$(uptime)"
  echo "== N = $n, $reps repetitions: $up_before" >&2
  sample $$ >"$log" &
  sampler=$!
  set +e
  mpiexec -n 8 --oversubscribe "$bin" --n "$n" --reps "$reps" --warmup 3 --json "$json"
  rc=$?
  set -e
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  up_after="$(uptime)"
  echo "== exit status $rc: $up_after" >&2
  head="$(git -C "$root" log -1 --format='%H %P' 2>/dev/null || echo unknown)"
  dirty="$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null | wc -l)"
  python3 - "$json" "$log" "$up_before" "$up_after" "$rc" "$head" "$dirty" <<'EOF'
import json, sys
path, log, before, after, rc, head, dirty = sys.argv[1:8]
rows = [l.split() for l in open(log) if len(l.split()) == 6]
def count(i):
    return sum(1 for r in rows if int(r[i]) > 0)
with open(path) as f:
    d = json.load(f)
d["run_conditions"] = {
    "recorded_by": "bench/results/nboverlap/run_symmcube.sh",
    "source_commit_and_parents": head,
    "source_modified_tracked_files": int(dirty),
    "uptime_before": before.strip(),
    "uptime_after": after.strip(),
    "exit_status": int(rc),
    "samples": len(rows),
    "sample_interval_seconds": 0.5,
    "samples_with_compiler": count(2),
    "samples_with_other_mpiexec": count(3),
    "samples_with_test_or_plexus_process": count(4),
    "samples_with_busy_other_process": count(5),
    "loadavg_1min_samples": [float(r[1]) for r in rows],
    "note": "processes of this run (children of the script) are not counted; busy = >= 20 % CPU in ps",
}
with open(path, "w") as f:
    f.write(json.dumps(d, indent=1) + "\n")
c = d["run_conditions"]
print(f"{path}: {c['samples']} samples, compiler in {c['samples_with_compiler']}, other mpiexec in "
      f"{c['samples_with_other_mpiexec']}, tests in {c['samples_with_test_or_plexus_process']}, busy other in "
      f"{c['samples_with_busy_other_process']}", file=sys.stderr)
EOF
  rm -f "$log"
done
