#!/usr/bin/env python3
"""Scaling of distributed multiplies (issue 16): the H2O-like, S-E-like and dense classes on 1, 2
and 4 ranks in one invocation, interleaved, with the speedups, the 4-rank time against 2, the
plexus/DBCSR time ratio and the issue's targets (reported as PASS/MISS, never asserted).

Every measurement is one job

  mpiexec -n N --bind-to none <build>/bin/plexus compare --strategies S1,S2 <the class's --set
      options> --set Kernel/cpu/Threads=1 --set multiply/Repetitions=R --json <tmp>

with OMP_NUM_THREADS=1 and R the class's repetitions (h2o 8, se 200, dense 8, so that a job's
median rests on enough multiplies; --repetitions N, or --quick's 2, sets one R for all);
`compare` runs the strategies interleaved inside the job and checks that their results agree (it
exits non-zero otherwise). The script only drives the jobs, collects their JSON and reduces: per
round it keeps each row's median multiply time, and reports the median over the rounds. Within a
round the classes, the rank counts and the strategies are rotated, so that no configuration always
runs first.

The time beyond kernel + transfer per tick comes from compare's rows (beyond_kernel_wait_seconds_median
over ticks_max: per multiply the slowest rank's time less its kernel and wait time, the median over
the multiplies). --kernel-runs LIST adds one `plexus run --json` job of the first strategy after each
compare job of those classes, as a cross-check from another job (default: none).

--baseline DIR compares two builds in one run ("before and after"): every compare job also runs
with DIR/bin/plexus, with the same command line but for the program, right before or after it
(which build goes first alternates from round to round). Each class, strategy and rank count then
gets the baseline's median time and the speed-up baseline / this build (> 1: faster now), also of
the kernel time and of the time beyond kernel + wait per tick; targets still come from --build
alone. All the strategies run through both builds: in a compare job they run interleaved, so
the command must be the same (dbcsr, the same library on both sides, shows roughly the noise).

Each target's value comes from the medians over the rounds; its ratio is also taken round by round,
and the report gives that range and says when the threshold lies within it (the run then does not
settle the target).

Run it on an otherwise idle machine (the load average is recorded before and after; a 1-minute
load above 0.5 before the run is warned about): figures from a busy machine mean nothing. The jobs
inherit the environment; the JSON's metadata.job_environment lists the OMPI_MCA_*, OPENBLAS_*,
PLEXUS_* and GLIBC_TUNABLES variables they ran under (e.g. OMPI_MCA_osc_sm_backing_directory,
docs/user-guide.md). Where a fresh page of memory is dear (plexus-bench's machine.os_costs: several
microseconds a 4 KB page), DBCSR, which allocates its buffers anew in every multiply, spends its time
in page faults; GLIBC_TUNABLES=glibc.malloc.hugetlb=1 gives its allocations huge pages (h2o on one
rank of the Zen 5 guest: 2.6-2.7 s a multiply without, 0.46 s with; docs/performance.md).

  python3 bench/scaling_bench.py                       # full sizes, 1,2,4 ranks, 3 rounds
  python3 bench/scaling_bench.py --quick --ranks 1,2 --rounds 1 --strategies cannon \\
          --json /tmp/s.json --force --check          # seconds: what the CTest test runs
  python3 bench/scaling_bench.py --baseline ../old/build --classes se   # A/B: old build against this

See bench/README.md, "scaling_bench.py".
"""
import argparse
import datetime
import json
import math
import os
import platform
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from bench_common import (OMPI_ENV, add_output_options, available_strategies, check_baseline_strategies,
                          check_output_path, check_strategies, configure, default_json_path, fail, first_line,
                          int_list, job_environment, launcher as mpi_launcher, loadavg, log, name_list,
                          os_costs, os_costs_line, plexus_program, plugin_listing, program_version, UsageError,
                          write_json)

configure("scaling_bench", "scaling")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# The classes: the --set options of its reproduce commands. `blocks` is scaled by --scale.
COMMON = ["Problem/Symmetric=false", "Problem/Distribution=block-cyclic"]
CLASSES = {
    # repetitions: multiplies per job and strategy, so that a job's median rests on enough work.
    # se's multiply takes about 0.25 ms: with 8 per job, one build against itself gave per-round
    # ratios of 0.64-1.41, with 200 0.94-1.09 (docs/performance.md, "se's figures").
    "h2o": {"title": "H2O-like", "blocks": 192, "block_sizes": "23", "occupancy": 0.1, "repetitions": 8},
    "se": {"title": "S-E-like", "blocks": 400, "block_sizes": "6", "occupancy": 0.01, "repetitions": 200},
    "dense": {"title": "dense", "blocks": 64, "block_sizes": "32", "occupancy": 1.0, "repetitions": 8},
}
QUICK_SCALE = 0.125          # h2o 24, se 50, dense 8 blocks
QUICK_REPETITIONS = 2
TICK_TARGET_SECONDS = 50e-6  # S-E: time beyond kernel + transfer per tick
SCHEMA = 2                   # 2: repetitions per class (timing.repetitions_per_job an object)


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def round_ratios(a, b):
    """a[i] / b[i], round by round ([] unless both have every round)."""
    if not a or not b or len(a) != len(b):
        return []
    return [ratio(x, y) for x, y in zip(a, b)]


def spread_note(values, threshold):
    """The rounds' range of a ratio, and whether the threshold lies inside it (the run does not
    settle the target: its verdict rests on the median alone)."""
    vals = [v for v in values if v is not None]
    if len(vals) < 2:
        return None, None, False
    lo, hi = min(vals), max(vals)
    return lo, hi, lo <= threshold <= hi


def speedup(before, after):
    """before / after where both are positive (the time beyond kernel + wait can be <= 0: no ratio)."""
    if before is None or after is None or not (before > 0 and after > 0):
        return None
    return before / after


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="scaling_bench.py",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=__doc__,
        epilog="classes (issue 16; Symmetric=false, Distribution=block-cyclic, Threads=1):\n" + "\n".join(
            "  %-6s %-9s Blocks=%d BlockSizes=%s Occupancy=%g" % (k, c["title"], c["blocks"], c["block_sizes"],
                                                               c["occupancy"]) for k, c in CLASSES.items())
        + "\n\ntargets (reported, never asserted):\n"
          "  h2o, dense: 2 ranks >= 1.8x the 1-rank speed\n"
          "  se: 2 ranks no slower than 1; time beyond kernel + transfer per tick < 50 us\n"
          "  every class: 4 ranks (oversubscribed on 2 cores) within 10 % of 2 ranks\n"
          "  with dbcsr: plexus <= 0.5x DBCSR's time (per flop: same problem) at every rank count\n"
          "\nexit status: 0 done (whatever the targets say), 1 a job failed or the check failed,\n"
          "2 a usage error.")
    p.add_argument("--build", default=os.path.join(REPO, "build"), metavar="DIR",
                   help="build directory holding bin/plexus (default: %(default)s)")
    p.add_argument("--baseline", default=None, metavar="DIR",
                   help="a second build directory (DIR/bin/plexus, e.g. of an older commit): every compare job "
                        "also runs with it, same command line, the two interleaved; the report adds the "
                        "speed-up of --build over it (baseline time / this time; default: none)")
    p.add_argument("--ranks", default="1,2,4", metavar="N,N,...", help="rank counts, comma-separated (default: %(default)s)")
    p.add_argument("--classes", default="h2o,se,dense", metavar="LIST", help="classes, comma-separated, of: %s (default: %%(default)s)"
                   % ", ".join(CLASSES))
    p.add_argument("--strategies", default=None, metavar="LIST",
                   help="plexus strategy specs (name[:Key=Value...]), comma-separated; the first is plexus's "
                        "(speedups and targets), dbcsr the yardstick (default: cannon, plus dbcsr when "
                        "`plexus plugins` lists it available)")
    p.add_argument("--rounds", type=int, default=3, metavar="R", help="interleaving rounds (default: %(default)s)")
    p.add_argument("--repetitions", type=int, default=None, metavar="N",
                   help="multiplies per job and strategy, multiply/Repetitions, for every class (default: "
                        "per class, %s; --quick: %d)"
                        % (", ".join("%s %d" % (c, v["repetitions"]) for c, v in CLASSES.items()), QUICK_REPETITIONS))
    p.add_argument("--warm-up", type=int, default=None, dest="warm_up", metavar="W",
                   help="Timing/WarmUp: uncounted solver runs per strategy and job (default: plexus's, 1)")
    p.add_argument("--scale", type=float, default=None, metavar="S",
                   help="multiply every class's block rows/columns by S (flops ~S^3); default 1")
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes (--scale %g unless given, %d repetitions for every class unless "
                        "--repetitions is given): for tests, no figures"
                        % (QUICK_SCALE, QUICK_REPETITIONS))
    p.add_argument("--kernel-runs", default="none", dest="kernel_runs", metavar="LIST",
                   help="classes (or all, none) that also get one `plexus run --json` job of the first strategy "
                        "per rank count and round, a cross-check of the kernel and wait times of compare's rows "
                        "(default: %(default)s)")
    add_output_options(p, "bench/results/scaling/scaling-<host>-<date>.json",
                       "re-read the written JSON and check its shape (exit 1 if it is not as written)")
    a = p.parse_args(argv)
    try:
        a.ranks = int_list(a.ranks, "--ranks")
        a.classes = name_list(a.classes, "--classes", "class")
        for c in a.classes:
            if c not in CLASSES:
                raise UsageError("unknown class '%s' in --classes (known: %s)" % (c, ", ".join(CLASSES)))
        kr = [c.strip() for c in a.kernel_runs.split(",") if c.strip()]
        if kr == ["all"]:
            kr = list(a.classes)
        elif kr == ["none"] or not kr:
            kr = []
        for c in kr:
            if c not in CLASSES:
                raise UsageError("unknown class '%s' in --kernel-runs (known: %s, or all, none)"
                                 % (c, ", ".join(CLASSES)))
        a.kernel_runs = [c for c in a.classes if c in kr]
        if a.rounds < 1:
            raise UsageError("--rounds %d: give at least 1" % a.rounds)
        if a.repetitions is not None and a.repetitions < 1:
            raise UsageError("--repetitions %d: give at least 1" % a.repetitions)
        given = a.repetitions if a.repetitions is not None else QUICK_REPETITIONS if a.quick else None
        a.class_repetitions = {c: given if given is not None else CLASSES[c]["repetitions"] for c in a.classes}
        if a.warm_up is not None and a.warm_up < 0:
            raise UsageError("--warm-up %d: give 0 or more" % a.warm_up)
        if a.scale is None:
            a.scale = QUICK_SCALE if a.quick else 1.0
        if not (a.scale > 0 and math.isfinite(a.scale)):
            raise UsageError("--scale %s: give a positive number" % a.scale)
        if a.strategies is not None:
            a.strategies = name_list(a.strategies, "--strategies", "strategy")
    except UsageError as e:
        fail(str(e))
    return a


def repetitions_text(opts):
    """The multiplies per job: one number where every class has the same, else per class."""
    values = set(opts.class_repetitions.values())
    if len(values) == 1:
        return "%d" % values.pop()
    return ", ".join("%s %d" % (c, opts.class_repetitions[c]) for c in opts.classes)


def class_sets(name, scale, repetitions, warm_up):
    c = CLASSES[name]
    blocks = max(1, int(round(c["blocks"] * scale)))
    sets = ["Problem/Blocks=%d" % blocks, "Problem/BlockSizes=%s" % c["block_sizes"],
            "Problem/Occupancy=%g" % c["occupancy"]] + COMMON
    sets += ["Kernel/cpu/Threads=1", "multiply/Repetitions=%d" % repetitions]
    if warm_up is not None:
        sets.append("Timing/WarmUp=%d" % warm_up)
    return blocks, sets


def run_job(cmd, env):
    t0 = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return p, time.time() - t0


def row_summary(row):
    """What the script keeps of one compare row (one strategy in one job)."""
    figs = row.get("strategy_figures") or {}
    keep = ["strategy", "kernel", "ranks", "grid", "multiplies", "seconds_median", "seconds_min", "seconds_mean",
            "gflops", "wait_seconds_max", "volume_per_rank_max", "network_bytes_per_rank_avg",
            "messages_per_rank_max", "relative_difference", "repetition_seconds", "warm_up_seconds",
            "kernel_seconds_max", "ticks_max", "beyond_kernel_wait_seconds_median", "work_balance"]
    out = {k: row.get(k) for k in keep}
    out["strategy_figures"] = figs
    return out


def rows_of(runs, cname, n, s):
    """The trimmed compare rows of strategy s in the jobs of class cname on n ranks, in round order."""
    return [row for r in runs if r["class"] == cname and r["ranks"] == n for row in r["rows"] if row["strategy"] == s]


def beyond_per_tick_rounds(got):
    """Compare's beyond_kernel_wait_seconds_median / ticks_max, round by round (rows without them left out)."""
    return [g["beyond_kernel_wait_seconds_median"] / g["ticks_max"] for g in got
            if g.get("ticks_max") and g.get("beyond_kernel_wait_seconds_median") is not None]


def beyond_per_tick(got):
    """Median over the rounds of compare's beyond_kernel_wait_seconds_median / ticks_max (None without them)."""
    return median(beyond_per_tick_rounds(got))


def kernel_median(got):
    return median([g.get("kernel_seconds_max") for g in got if g.get("kernel_seconds_max") is not None])


def analyse(opts, strategies, runs, kernel_runs):
    """Per class, strategy and rank count: medians over rounds; speedups, ratios and targets."""
    primary = strategies[0]
    yard = "dbcsr" if "dbcsr" in strategies and primary != "dbcsr" else None
    classes = {}
    rows = []
    for cname in opts.classes:
        per = {}
        for s in strategies:
            per[s] = {}
            for n in opts.ranks:
                got = rows_of(runs, cname, n, s)
                t = [g["seconds_median"] for g in got]
                waits = [g["wait_seconds_max"] for g in got]
                figs = got[-1]["strategy_figures"] if got else {}
                tmed = median(t)
                wmed = median(waits)
                gfl = median([g["gflops"] for g in got])
                # compare's rows: the algorithm's ticks and, per multiply, the slowest rank's time
                # beyond its kernel and its waits (median over the multiplies); older rows lack them.
                ticks = median([g.get("ticks_max") for g in got if g.get("ticks_max")]) or (
                    figs.get("virtual_grid") if s.split(":")[0] == "cannon" else None)
                beyond = None
                if ticks and tmed is not None and wmed is not None:
                    beyond = (tmed - wmed) / ticks
                kmed = kernel_median(got)
                # The `run` jobs (--kernel-runs): median time, kernel and wait of the same job.
                kr = [k["summary"] for k in kernel_runs if k["class"] == cname and k["ranks"] == n
                      and k["strategy"] == s]
                k_t = median([k["seconds_per_multiply_median"] for k in kr])
                k_k = median([k["kernel_seconds_max"] for k in kr])
                k_w = median([k["wait_seconds_max"] for k in kr])
                per_tick = None
                if kr and ticks:
                    per_tick = median([(k["seconds_per_multiply_median"] - k["kernel_seconds_max"]
                                        - k["wait_seconds_max"]) / ticks for k in kr])
                entry = {
                    "class": cname, "strategy": s, "ranks": n,
                    "seconds_median": tmed,
                    "seconds_per_round": t,
                    "gflops_median": gfl,
                    "wait_seconds_max_median": wmed,
                    # DBCSR's traffic bypasses plexus's counting layer: its wait reads 0, "not counted".
                    "wait_share": None if s.split(":")[0] == "dbcsr" else ratio(wmed, tmed),
                    "ticks": ticks,
                    "beyond_wait_per_tick_seconds_upper_bound": beyond,
                    "kernel_seconds_max_median": kmed,
                    "kernel_share": None if s.split(":")[0] == "dbcsr" else ratio(kmed, tmed),
                    "beyond_kernel_wait_per_tick_seconds": beyond_per_tick(got),
                    "beyond_kernel_wait_per_tick_seconds_per_round": beyond_per_tick_rounds(got),
                    "run_job": None if not kr else {
                        "seconds_median": k_t, "kernel_seconds_max_median": k_k, "wait_seconds_max_median": k_w,
                        "kernel_share": ratio(k_k, k_t), "wait_share": ratio(k_w, k_t),
                        "beyond_kernel_wait_per_tick_seconds": per_tick},
                    "volume_per_rank_max": median([g["volume_per_rank_max"] for g in got]),
                    # The busiest rank's flops over the average rank's (compare's rows since stop 59):
                    # the same in every round, as the problem is. 2 over 1 is at most 2 / this.
                    "work_balance": median([g.get("work_balance") for g in got
                                            if g.get("work_balance") is not None]),
                    "relative_difference_max": max([g["relative_difference"] or 0.0 for g in got] or [None]),
                    "dbcsr_multiply_seconds": median([g["strategy_figures"].get("dbcsr_multiply_seconds")
                                                      for g in got]),
                    "strategy_figures_last_round": figs,
                }
                per[s][str(n)] = entry
                rows.append(entry)
        speed = {}
        for s in strategies:
            t1 = per[s].get("1", {}).get("seconds_median")
            t2 = per[s].get("2", {}).get("seconds_median")
            t4 = per[s].get("4", {}).get("seconds_median")
            r1, r2, r4 = (per[s].get(str(n), {}).get("seconds_per_round") for n in (1, 2, 4))
            # The same ratios round by round: a round's jobs ran minutes apart at most, so the
            # machine's drift from round to round shows as their spread.
            speed[s] = {"speedup_2_vs_1": ratio(t1, t2), "speedup_4_vs_1": ratio(t1, t4),
                        "time_4_vs_2": ratio(t4, t2),
                        "per_round": {"speedup_2_vs_1": round_ratios(r1, r2), "speedup_4_vs_1": round_ratios(r1, r4),
                                      "time_4_vs_2": round_ratios(r4, r2)}}
        vs = {}
        if yard:
            for s in strategies:
                if s == yard:
                    continue
                vs[s] = {str(n): {"time_ratio": ratio(per[s][str(n)]["seconds_median"],
                                                      per[yard][str(n)]["seconds_median"]),
                                  "time_ratio_vs_dbcsr_multiply_only": ratio(
                                      per[s][str(n)]["seconds_median"], per[yard][str(n)]["dbcsr_multiply_seconds"])}
                         for n in opts.ranks}
        blocks, sets = class_sets(cname, opts.scale, opts.class_repetitions[cname], opts.warm_up)
        classes[cname] = {"title": CLASSES[cname]["title"], "blocks": blocks,
                          "block_sizes": CLASSES[cname]["block_sizes"], "occupancy": CLASSES[cname]["occupancy"],
                          "repetitions": opts.class_repetitions[cname],
                          "set_options": sets, "strategies": per, "speedups": speed, "plexus_vs_dbcsr": vs}
    return classes, rows, targets(opts, primary, yard, classes)


def compare_builds(opts, strategies, runs, base_runs):
    """--baseline: per class, strategy and rank count, the baseline's medians over the rounds beside
    this build's, and the speed-ups baseline / this build (> 1: this build is faster)."""
    out = []
    for cname in opts.classes:
        for s in strategies:
            for n in opts.ranks:
                new = rows_of(runs, cname, n, s)
                old = rows_of(base_runs, cname, n, s)
                t_new = median([g["seconds_median"] for g in new])
                t_old = median([g["seconds_median"] for g in old])
                k_new, k_old = kernel_median(new), kernel_median(old)
                b_new, b_old = beyond_per_tick(new), beyond_per_tick(old)
                # the two jobs of one round ran back to back: their ratio, round by round
                per_round = []
                for r in range(1, opts.rounds + 1):
                    a = rows_of([x for x in base_runs if x["round"] == r], cname, n, s)
                    b = rows_of([x for x in runs if x["round"] == r], cname, n, s)
                    per_round.append(speedup(a[0]["seconds_median"], b[0]["seconds_median"]) if a and b else None)
                out.append({
                    "class": cname, "strategy": s, "ranks": n,
                    "baseline_seconds_median": t_old,
                    "seconds_median": t_new,
                    "speedup": speedup(t_old, t_new),
                    "speedup_per_round": per_round,
                    "baseline_seconds_per_round": [g["seconds_median"] for g in old],
                    "baseline_kernel_seconds_max_median": k_old,
                    "kernel_seconds_max_median": k_new,
                    "kernel_speedup": speedup(k_old, k_new),
                    "baseline_beyond_kernel_wait_per_tick_seconds": b_old,
                    "beyond_kernel_wait_per_tick_seconds": b_new,
                    "beyond_kernel_wait_per_tick_speedup": speedup(b_old, b_new),
                })
    return out


def target(tid, cname, what, value, threshold, ok, note=None, unit="", rounds=None):
    if ok is None:
        status = "n/a"
    else:
        status = "PASS" if ok else "MISS"
    t = {"id": tid, "class": cname, "what": what, "value": value, "threshold": threshold, "unit": unit,
         "status": status, "note": note}
    if rounds is not None:
        # A ratio's value per round, their range, and whether the threshold lies within it.
        lo, hi, within = spread_note(rounds, threshold)
        t.update({"rounds": rounds, "rounds_min": lo, "rounds_max": hi, "threshold_within_rounds": within})
    return t


def targets(opts, primary, yard, classes):
    out = []
    have = set(opts.ranks)
    for cname in opts.classes:
        c = classes[cname]
        sp = c["speedups"][primary]
        if cname in ("h2o", "dense"):
            v = sp["speedup_2_vs_1"]
            note = None if {1, 2} <= have else "needs --ranks with 1 and 2"
            balance = c["strategies"][primary].get("2", {}).get("work_balance")
            if note is None and balance is not None:
                note = ("the busiest of 2 ranks has %.3fx the average rank's flops: 2 over 1 is at most %.2f"
                        % (balance, 2.0 / balance))
            out.append(target("speedup_2_vs_1", cname, "%s: 2 ranks >= 1.8x the 1-rank speed" % primary, v, 1.8,
                              None if v is None else v >= 1.8, note, "x", sp["per_round"]["speedup_2_vs_1"]))
        if cname == "se":
            v = sp["speedup_2_vs_1"]
            out.append(target("speedup_2_vs_1", cname, "%s: 2 ranks no slower than 1 rank" % primary, v, 1.0,
                              None if v is None else v >= 1.0,
                              None if {1, 2} <= have else "needs --ranks with 1 and 2", "x",
                              sp["per_round"]["speedup_2_vs_1"]))
            for n in opts.ranks:
                e = c["strategies"][primary][str(n)]
                rj = e["run_job"]
                if e["beyond_kernel_wait_per_tick_seconds"] is not None:
                    b = e["beyond_kernel_wait_per_tick_seconds"]
                    ok = b < TICK_TARGET_SECONDS
                    note = ("per multiply the slowest rank's (time - kernel - wait), median over the multiplies, "
                            "over the ticks; median over the rounds; wait stands for transfer")
                elif rj is not None and rj["beyond_kernel_wait_per_tick_seconds"] is not None:
                    b = rj["beyond_kernel_wait_per_tick_seconds"]
                    ok = b < TICK_TARGET_SECONDS
                    note = ("(median - kernel - wait) / ticks of the `run` jobs; kernel and wait are each the "
                            "max over ranks of a rank's average per multiply, wait stands for transfer")
                else:
                    # Rows of a plexus older than their ticks_max and beyond_kernel_wait_seconds_median:
                    # only an upper bound. Below the threshold it is a PASS whatever the kernel took;
                    # above it nothing is known.
                    b = e["beyond_wait_per_tick_seconds_upper_bound"]
                    ok = True if (b is not None and b < TICK_TARGET_SECONDS) else None
                    note = ("(median - wait) / ticks, an upper bound (these compare rows carry no kernel time; "
                            "ticks only for cannon)")
                from_rows = e["beyond_kernel_wait_per_tick_seconds"] is not None
                out.append(target("beyond_kernel_transfer_per_tick", cname,
                                  "%s, %d rank(s): time beyond kernel + transfer per tick < 50 us" % (primary, n),
                                  b, TICK_TARGET_SECONDS, ok, note, "s",
                                  e["beyond_kernel_wait_per_tick_seconds_per_round"] if from_rows else None))
        v = sp["time_4_vs_2"]
        out.append(target("time_4_vs_2", cname, "%s: 4 ranks (oversubscribed) within 10 %% of 2 ranks" % primary,
                          v, 1.10, None if v is None else v <= 1.10,
                          None if {2, 4} <= have else "needs --ranks with 2 and 4", "x",
                          sp["per_round"]["time_4_vs_2"]))
        if yard:
            for n in opts.ranks:
                v = c["plexus_vs_dbcsr"][primary][str(n)]["time_ratio"]
                out.append(target("vs_dbcsr", cname, "%s, %d rank(s): <= 0.5x DBCSR's time per flop" % (primary, n),
                                  v, 0.5, None if v is None else v <= 0.5,
                                  "same problem, so the time ratio; DBCSR's time is its whole multiply "
                                  "(conversion and session included)", "x"))
    return out


def fmt_t(x):
    if x is None:
        return "-"
    if x >= 100:
        return "%.0f" % x
    return "%.3g" % x


def fmt_r(x, pct=False):
    if x is None:
        return "-"
    return ("%.0f%%" % (100 * x)) if pct else "%.2f" % x


def fmt_balance(x):
    return "-" if x is None else "%.3f" % x


def baseline_report(opts, strategies, base):
    """The A/B table: per class, strategy and rank count, both builds' times and the speed-ups."""
    L = ["", "this build against the baseline: speed-up = baseline s / this build s (> 1: faster now)",
         "  this build: %s (%s)" % (base["build_dir"], first_line(base["build_version"])),
         "  baseline:   %s (%s)" % (base["dir"], first_line(base["version"]))]
    if base["same_build"]:
        L.append("  (the same program: an A/A run, the speed-ups show the noise)")
    head = "%-6s %-12s%6s%12s%12s%9s%13s%8s%13s" % ("class", "strategy", "ranks", "baseline s", "this s",
                                                   "speed-up", "per round", "kernel", "beyond/tick")
    L.append(head)
    L.append("-" * len(head))
    for row in base["rows"]:
        pr = [x for x in row["speedup_per_round"] if x is not None]
        rng = "-" if not pr else ("%.2f" % pr[0] if len(pr) == 1 else "%.2f..%.2f" % (min(pr), max(pr)))
        L.append("%-6s %-12s%6d%12s%12s%9s%13s%8s%13s" % (
            row["class"], row["strategy"][:12], row["ranks"], fmt_t(row["baseline_seconds_median"]),
            fmt_t(row["seconds_median"]), fmt_r(row["speedup"]), rng, fmt_r(row["kernel_speedup"]),
            fmt_r(row["beyond_kernel_wait_per_tick_speedup"])))
    L.append("(seconds per multiply, median over the rounds; per round: the two jobs run back to back; kernel,")
    L.append(" beyond/tick: the same speed-up of the kernel time and of the time beyond kernel + wait per tick)")
    if any(s.split(":")[0] == "dbcsr" for s in strategies):
        L.append("(dbcsr is the same library in both builds: its speed-ups show roughly the noise)")
    return L


def text_report(opts, strategies, classes, tgts, meta, base=None):
    L = []
    rk = opts.ranks
    head = "%-6s %-16s" % ("class", "strategy") + "".join("%10s" % ("t%d (s)" % n) for n in rk)
    head += "%7s%7s%7s  %s" % ("2v1", "4v1", "t4/t2", "wait share " + "/".join(str(n) for n in rk))
    L.append(head)
    L.append("-" * min(100, len(head)))
    for cname in opts.classes:
        c = classes[cname]
        for s in strategies:
            e = c["strategies"][s]
            sp = c["speedups"][s]
            line = "%-6s %-16s" % (cname, s[:16]) + "".join("%10s" % fmt_t(e[str(n)]["seconds_median"]) for n in rk)
            line += "%7s%7s%7s  %s" % (fmt_r(sp["speedup_2_vs_1"]), fmt_r(sp["speedup_4_vs_1"]),
                                       fmt_r(sp["time_4_vs_2"]),
                                       "/".join(fmt_r(e[str(n)]["wait_share"], True) for n in rk))
            L.append(line)
        e = c["strategies"][strategies[0]]
        if any(e[str(n)]["beyond_kernel_wait_per_tick_seconds"] is not None for n in rk):
            def cv(n, key, scale=1.0):
                v = e[str(n)].get(key)
                return "-" if v is None else "%.0f" % (v * scale)
            L.append("%-6s %-16s kernel %% %s, beyond kernel + wait per tick (us) %s"
                     % ("", strategies[0][:16], "/".join(cv(n, "kernel_share", 100) for n in rk),
                        "/".join(cv(n, "beyond_kernel_wait_per_tick_seconds", 1e6) for n in rk)))
        if any(e[str(n)]["run_job"] for n in rk):
            def rj(n, key, scale=1.0):
                v = (e[str(n)]["run_job"] or {}).get(key)
                return "-" if v is None else "%.0f" % (v * scale)
            L.append("%-6s %-16s kernel %% %s, wait %% %s, beyond per tick (us) %s"
                     % ("", ("%s run" % strategies[0])[:16], "/".join(rj(n, "kernel_share", 100) for n in rk),
                        "/".join(rj(n, "wait_share", 100) for n in rk),
                        "/".join(rj(n, "beyond_kernel_wait_per_tick_seconds", 1e6) for n in rk)))
        if any(e[str(n)].get("work_balance") is not None for n in rk):
            L.append("%-6s %-16s work balance (busiest rank's flops / average) %s"
                     % ("", strategies[0][:16], "/".join(fmt_balance(e[str(n)].get("work_balance")) for n in rk)))
        for s, byn in c["plexus_vs_dbcsr"].items():
            L.append("%-6s %-16s" % ("", ("%s/dbcsr" % s)[:16])
                     + "".join("%10s" % fmt_r(byn[str(n)]["time_ratio"]) for n in rk) + "   (time ratio)")
    if base is not None:
        L += baseline_report(opts, strategies, base)
    L.append("")
    L.append("times: seconds per multiply, median over %d round(s) of each job's median of its multiplies (%s)"
             % (opts.rounds, repetitions_text(opts)))
    L.append("targets (reported, never asserted):")
    for t in tgts:
        v = t["value"]
        if v is None:
            vs = "-"
        elif t["unit"] == "s":
            vs = "%.1f us" % (v * 1e6)
        else:
            vs = "%.2f" % v
        if t.get("rounds_min") is not None:
            lo, hi = t["rounds_min"], t["rounds_max"]
            rng = "%.1f-%.1f us" % (lo * 1e6, hi * 1e6) if t["unit"] == "s" else "%.2f-%.2f" % (lo, hi)
            vs += " (rounds %s%s)" % (rng, ": the threshold lies within" if t["threshold_within_rounds"] else "")
        if t["id"] == "speedup_2_vs_1" and (t["note"] or "").startswith("the busiest"):
            vs += "; " + t["note"]
        L.append("  %-4s %-6s %s: %s" % (t["status"], t["class"], t["what"], vs))
    if "os_costs" in meta:  # files written before stop 66 lack it
        L.append(os_costs_line(meta["os_costs"], meta.get("os_costs_why_not")))
    la = meta["load_average_before"]
    lb = meta["load_average_after"]
    L.append("load average (1, 5, 15 min): before %s, after %s" % (
        "-" if la is None else ", ".join("%.2f" % x for x in la),
        "-" if lb is None else ", ".join("%.2f" % x for x in lb)))
    # The jobs' settings beyond the script's own defaults (OMPI_ENV), which change what they measure.
    extra_env = {k: v for k, v in (meta.get("job_environment") or {}).items() if OMPI_ENV.get(k) != v}
    if extra_env:
        L.append("the jobs ran with: " + " ".join("%s=%s" % kv for kv in sorted(extra_env.items())))
    if meta["busy_machine"]:
        L.append("WARNING: the 1-minute load average before the run was above 0.5: the machine was not idle, "
                 "the figures are not to be trusted")
    return "\n".join(L)


def check_json(path, opts, strategies):
    """Re-read the file and check its shape: every key, every class x strategy x ranks entry, the
    jobs' agreement, the targets' statuses, the metadata."""
    problems = []
    with open(path) as f:
        doc = json.load(f)
    for k in ("schema", "benchmark", "metadata", "options", "classes", "rows", "runs", "kernel_runs", "targets"):
        if k not in doc:
            problems.append("missing key '%s'" % k)
    if problems:
        return problems
    m = doc["metadata"]
    for k in ("date_utc", "host", "command_line", "load_average_before", "load_average_after", "busy_machine",
              "plexus_metadata", "timing", "os_costs", "os_costs_why_not"):
        if k not in m:
            problems.append("metadata: missing '%s'" % k)
    oc = m.get("os_costs")
    if oc is None and not m.get("os_costs_why_not"):
        problems.append("metadata.os_costs is null without a reason")
    elif oc is not None:
        for k in ("syscall_us", "process_switch_us", "fresh_page_us", "fresh_huge_gb_per_s"):
            if k not in oc:
                problems.append("metadata.os_costs: missing '%s'" % k)
    pm = m.get("plexus_metadata") or {}
    for k in ("plexus", "ranks", "mpi_library", "parameters"):
        if k not in pm:
            problems.append("metadata.plexus_metadata: missing '%s'" % k)
    if not (pm.get("plexus") or {}).get("git"):
        problems.append("metadata.plexus_metadata.plexus.git is empty")
    try:
        datetime.datetime.strptime(m.get("date_utc", ""), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        problems.append("metadata.date_utc does not parse: %r" % m.get("date_utc"))
    # What each class ran, in the three places that record it.
    if doc["options"].get("class_repetitions") != opts.class_repetitions:
        problems.append("options.class_repetitions = %r, expected %r" % (doc["options"].get("class_repetitions"),
                                                                         opts.class_repetitions))
    if (m.get("timing") or {}).get("repetitions_per_job") != opts.class_repetitions:
        problems.append("metadata.timing.repetitions_per_job = %r, expected %r" % (
            (m.get("timing") or {}).get("repetitions_per_job"), opts.class_repetitions))
    for c in opts.classes:
        if (doc["classes"].get(c) or {}).get("repetitions") != opts.class_repetitions[c]:
            problems.append("classes.%s.repetitions = %r, expected %d" % (
                c, (doc["classes"].get(c) or {}).get("repetitions"), opts.class_repetitions[c]))
    njobs = opts.rounds * len(opts.classes) * len(opts.ranks)
    if len(doc["runs"]) != njobs:
        problems.append("runs: %d, expected %d" % (len(doc["runs"]), njobs))
    for r in doc["runs"]:
        if r.get("exit_status") != 0:
            problems.append("run %s/%s/%s: exit status %s" % (r.get("round"), r.get("class"), r.get("ranks"),
                                                              r.get("exit_status")))
        if len(r.get("rows", [])) != len(strategies):
            problems.append("run %s/%s/%s: %d rows" % (r.get("round"), r.get("class"), r.get("ranks"),
                                                       len(r.get("rows", []))))
        for row in r.get("rows", []):
            want_reps = opts.class_repetitions.get(r.get("class"))
            if len(row.get("repetition_seconds") or []) != want_reps:
                problems.append("run %s/%s/%s %s: %d repetition times, expected %s" % (
                    r.get("round"), r.get("class"), r.get("ranks"), row.get("strategy"),
                    len(row.get("repetition_seconds") or []), want_reps))
            rd = row.get("relative_difference")
            if rd is None or not rd <= r.get("tolerance", 1e-10):
                problems.append("run %s/%s/%s %s: results differ (%r)" % (r.get("round"), r.get("class"),
                                                                        r.get("ranks"), row.get("strategy"), rd))
    nk = opts.rounds * len(opts.kernel_runs) * len(opts.ranks)
    if len(doc["kernel_runs"]) != nk:
        problems.append("kernel_runs: %d, expected %d" % (len(doc["kernel_runs"]), nk))
    for k in doc["kernel_runs"]:
        sm = k.get("summary") or {}
        if k.get("exit_status") != 0:
            problems.append("kernel run %s/%s/%s: exit status %s" % (k.get("round"), k.get("class"), k.get("ranks"),
                                                                     k.get("exit_status")))
        for key in ("seconds_per_multiply_median", "kernel_seconds_max", "wait_seconds_max"):
            if not isinstance(sm.get(key), (int, float)):
                problems.append("kernel run %s/%s/%s: summary.%s = %r" % (k.get("round"), k.get("class"),
                                                                         k.get("ranks"), key, sm.get(key)))
    if len(doc["rows"]) != len(opts.classes) * len(strategies) * len(opts.ranks):
        problems.append("rows: %d, expected %d" % (len(doc["rows"]), len(opts.classes) * len(strategies)
                                                   * len(opts.ranks)))
    for cname in opts.classes:
        c = doc["classes"].get(cname)
        if c is None:
            problems.append("classes: missing '%s'" % cname)
            continue
        for s in strategies:
            for n in opts.ranks:
                e = (c.get("strategies", {}).get(s) or {}).get(str(n))
                if e is None:
                    problems.append("classes.%s.strategies.%s.%d missing" % (cname, s, n))
                    continue
                t = e.get("seconds_median")
                if not isinstance(t, (int, float)) or not t > 0:
                    problems.append("classes.%s.strategies.%s.%d.seconds_median = %r" % (cname, s, n, t))
                if len(e.get("seconds_per_round", [])) != opts.rounds:
                    problems.append("classes.%s.strategies.%s.%d: %d rounds" % (cname, s, n,
                                                                               len(e.get("seconds_per_round", []))))
            for k in ("speedup_2_vs_1", "speedup_4_vs_1", "time_4_vs_2"):
                if k not in c.get("speedups", {}).get(s, {}):
                    problems.append("classes.%s.speedups.%s.%s missing" % (cname, s, k))
                pr = (c.get("speedups", {}).get(s, {}).get("per_round") or {}).get(k)
                if pr is None:
                    problems.append("classes.%s.speedups.%s.per_round.%s missing" % (cname, s, k))
                elif pr and len(pr) != opts.rounds:
                    problems.append("classes.%s.speedups.%s.per_round.%s: %d rounds" % (cname, s, k, len(pr)))
    for t in doc["targets"]:
        if t.get("status") not in ("PASS", "MISS", "n/a"):
            problems.append("target %s/%s: status %r" % (t.get("class"), t.get("id"), t.get("status")))
        if "rounds" in t and t["rounds_min"] is not None and not (
                t["rounds_min"] <= t["rounds_max"]
                and t["threshold_within_rounds"] == (t["rounds_min"] <= t["threshold"] <= t["rounds_max"])):
            problems.append("target %s/%s: rounds' range %r-%r against threshold %r" % (
                t.get("class"), t.get("id"), t["rounds_min"], t["rounds_max"], t["threshold"]))
    if not doc["targets"]:
        problems.append("no targets")
    problems += check_baseline(doc.get("baseline"), opts, strategies)
    return problems


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def check_baseline(base, opts, strategies):
    """--check of the `baseline` object: null without --baseline; with it, its jobs (as the runs) and
    one row per class, strategy and rank count whose times and speed-ups are positive numbers."""
    if opts.baseline is None:
        return [] if base is None else ["baseline: present, but no --baseline was given"]
    if not isinstance(base, dict):
        return ["baseline: %r, expected an object (--baseline was given)" % (base,)]
    problems = []
    for k in ("dir", "program", "same_build", "version", "plexus", "plugin_files", "build_version",
              "plexus_metadata", "rows", "runs"):
        if k not in base:
            problems.append("baseline: missing '%s'" % k)
    if base.get("dir") != os.path.abspath(opts.baseline):
        problems.append("baseline.dir = %r, expected %r" % (base.get("dir"), os.path.abspath(opts.baseline)))
    if not ((base.get("plexus_metadata") or {}).get("plexus") or {}).get("git"):
        problems.append("baseline.plexus_metadata.plexus.git is empty")
    runs = base.get("runs") or []
    njobs = opts.rounds * len(opts.classes) * len(opts.ranks)
    if len(runs) != njobs:
        problems.append("baseline.runs: %d, expected %d" % (len(runs), njobs))
    for r in runs:
        where = "baseline run %s/%s/%s" % (r.get("round"), r.get("class"), r.get("ranks"))
        if r.get("exit_status") != 0:
            problems.append("%s: exit status %s" % (where, r.get("exit_status")))
        if r.get("ran_first") != (r.get("round", 0) % 2 == 0):
            problems.append("%s: ran_first = %r in round %r" % (where, r.get("ran_first"), r.get("round")))
        if len(r.get("rows", [])) != len(strategies):
            problems.append("%s: %d rows" % (where, len(r.get("rows", []))))
        for row in r.get("rows", []):
            want_reps = opts.class_repetitions.get(r.get("class"))
            if len(row.get("repetition_seconds") or []) != want_reps:
                problems.append("%s %s: %d repetition times, expected %s" % (
                    where, row.get("strategy"), len(row.get("repetition_seconds") or []), want_reps))
            rd = row.get("relative_difference")
            if rd is None or not rd <= r.get("tolerance", 1e-10):
                problems.append("%s %s: results differ (%r)" % (where, row.get("strategy"), rd))
    rows = base.get("rows") or []
    want = [(c, s, n) for c in opts.classes for s in strategies for n in opts.ranks]
    got = [(row.get("class"), row.get("strategy"), row.get("ranks")) for row in rows]
    if got != want:
        problems.append("baseline.rows: %d rows %s, expected %d (class x strategy x ranks)"
                        % (len(rows), got[:4], len(want)))
    for i, row in enumerate(rows):
        where = "baseline.rows.%d (%s, %s, %s ranks)" % (i, row.get("class"), row.get("strategy"), row.get("ranks"))
        for k in ("baseline_seconds_median", "seconds_median", "speedup"):
            if not (is_number(row.get(k)) and row[k] > 0):
                problems.append("%s: %s = %r, expected a positive number" % (where, k, row.get(k)))
        if is_number(row.get("speedup")) and is_number(row.get("baseline_seconds_median")) and \
                is_number(row.get("seconds_median")) and row["seconds_median"] > 0 and \
                abs(row["speedup"] - row["baseline_seconds_median"] / row["seconds_median"]) > 1e-9 * row["speedup"]:
            problems.append("%s: speedup %r is not baseline / this build" % (where, row["speedup"]))
        pr = row.get("speedup_per_round")
        if not isinstance(pr, list) or len(pr) != opts.rounds or not all(is_number(x) and x > 0 for x in pr):
            problems.append("%s: speedup_per_round = %r, expected %d positive numbers" % (where, pr, opts.rounds))
        if len(row.get("baseline_seconds_per_round") or []) != opts.rounds:
            problems.append("%s: baseline_seconds_per_round has %d entries, expected %d"
                            % (where, len(row.get("baseline_seconds_per_round") or []), opts.rounds))
        # null where a side lacks the figure (dbcsr has no kernel time or ticks; older rows lack them)
        for k in ("kernel_speedup", "beyond_kernel_wait_per_tick_speedup"):
            if k not in row:
                problems.append("%s: missing '%s'" % (where, k))
            elif row[k] is not None and not (is_number(row[k]) and row[k] > 0):
                problems.append("%s: %s = %r, expected a positive number or null" % (where, k, row[k]))
    return problems


def main(argv):
    opts = parse_args(argv)
    build = os.path.abspath(opts.build)
    plexus = plexus_program(opts.build)
    base_dir = base_plexus = None
    if opts.baseline is not None:
        base_dir = os.path.abspath(opts.baseline)
        base_plexus = plexus_program(opts.baseline, "--baseline")
    launcher = mpi_launcher(opts.mpiexec)
    env = job_environment()

    listing = plugin_listing(plexus, env)
    comms, plugin_files = available_strategies(listing)
    if opts.strategies is None:
        strategies = ["cannon"]
        if comms.get("dbcsr", (False, None))[0]:
            strategies.append("dbcsr")
    else:
        strategies = opts.strategies
        check_strategies(strategies, comms)
    base = None
    if base_plexus is not None:
        # The baseline runs the same command: it must have every strategy, available.
        base_listing = plugin_listing(base_plexus, env)
        base_comms, base_files = available_strategies(base_listing)
        check_baseline_strategies(strategies, base_comms, base_plexus)
        names = sorted(set(s.split(":")[0] for s in strategies))
        same = os.path.realpath(base_plexus) == os.path.realpath(plexus)
        if not same and any(plugin_files.get(k) == base_files.get(k) for k in names):
            log("WARNING: both builds load the same plugin file for %s (PLEXUS_PLUGIN_PATH=%r): the "
                "comparison is not of two builds" % (", ".join(k for k in names if plugin_files.get(k)
                                                               == base_files.get(k)),
                                                    env.get("PLEXUS_PLUGIN_PATH")))
        base = {
            "dir": base_dir,
            "program": base_plexus,
            "same_build": same,
            "version": program_version(base_plexus, env),
            "plexus": (base_listing.get("metadata") or {}).get("plexus"),
            "plugin_files": {k: base_files.get(k) for k in names},
            "build_dir": build,
            "build_version": program_version(plexus, env),
            "build_plexus": (listing.get("metadata") or {}).get("plexus"),
            "build_plugin_files": {k: plugin_files.get(k) for k in names},
            "order": "each compare job runs with both builds back to back, the same command but for the "
                     "program; this build first in odd rounds, the baseline first in even ones",
            "statistic": "speed-up = baseline's seconds_median / this build's (medians over the rounds); "
                         "> 1: this build is faster",
        }
        log("baseline: %s (%s)%s" % (base_plexus, first_line(base["version"]),
                                      ": the same program as --build, an A/A run" if same else ""))

    created_default = opts.json is None
    out_path = opts.json or default_json_path("scaling")
    check_output_path(out_path, opts.force, created_default)

    load_before = loadavg()
    busy = load_before is not None and load_before[0] > 0.5
    if busy:
        log("WARNING: 1-minute load average %.2f > 0.5: the machine is not idle; figures will be noisy"
            % load_before[0])
    # What a switch between ranks sharing a core and a fresh page cost here: they set the 4-rank
    # figures and those of a library that allocates every multiply (docs/performance.md).
    costs, costs_why_not = os_costs(plexus, env)
    log(os_costs_line(costs, costs_why_not))

    jobs = []
    for r in range(opts.rounds):
        classes = opts.classes[r % len(opts.classes):] + opts.classes[:r % len(opts.classes)]
        for ci, cname in enumerate(classes):
            k = (r + ci) % len(opts.ranks)
            ranks = opts.ranks[k:] + opts.ranks[:k]
            for n in ranks:
                k2 = r % len(strategies)
                order = strategies[k2:] + strategies[:k2]
                # --baseline: the same job with the baseline's program, right before or after
                builds = ["build"] if base is None else (["build", "baseline"] if r % 2 == 0
                                                         else ["baseline", "build"])
                for b in builds:
                    jobs.append(("compare", r, cname, n, order, b))
                if cname in opts.kernel_runs:
                    jobs.append(("run", r, cname, n, [strategies[0]], "build"))

    log("%d jobs: %d round(s) x %d class(es) x %d rank count(s)%s%s; strategies %s; multiplies per job and "
        "strategy: %s" % (len(jobs), opts.rounds, len(opts.classes), len(opts.ranks),
                      " x 2 builds (this and the baseline)" if base is not None else "",
                      " (+ a `run` job for the kernel time: %s)" % ",".join(opts.kernel_runs) if opts.kernel_runs
                      else "", ",".join(strategies), repetitions_text(opts)))
    runs = []
    base_runs = []
    kernel_runs = []
    plexus_meta = None
    base_meta = None
    t_start = time.time()
    tmpdir = tempfile.mkdtemp(prefix="plexus-scaling-")
    try:
        for i, (kind, r, cname, n, order, which) in enumerate(jobs):
            _, sets = class_sets(cname, opts.scale, opts.class_repetitions[cname], opts.warm_up)
            tmp = os.path.join(tmpdir, "job%d.json" % i)
            cmd = launcher + ["-n", str(n), "--bind-to", "none", base_plexus if which == "baseline" else plexus]
            if kind == "compare":
                cmd += ["compare", "--strategies", ",".join(order)]
            else:
                cmd += ["run", "--set", "Communication/Strategy=%s" % order[0].split(":")[0]]
                for kv in order[0].split(":")[1:]:
                    cmd += ["--set", "Communication/%s/%s" % (order[0].split(":")[0], kv)]
            for s in sets:
                cmd += ["--set", s]
            cmd += ["--json", tmp, "--log-level", "warn", "--no-params-file", "--no-progress"]
            done = time.time() - t_start
            est = "" if i == 0 else ", about %.0f s left" % (done / i * (len(jobs) - i))
            tag = " [baseline]" if which == "baseline" else ""
            log("job %d/%d: round %d, %s, %d rank(s), %s %s%s (elapsed %.0f s%s)"
                % (i + 1, len(jobs), r + 1, cname, n, kind, ",".join(order), tag, done, est))
            p, wall = run_job(cmd, env)
            if p.returncode != 0 or not os.path.isfile(tmp):
                sys.stderr.write("---- command: %s\n---- exit status %d; output:\n%s%s\n"
                                 % (" ".join(shlex.quote(c) for c in cmd), p.returncode, p.stdout, p.stderr))
                fail("job %d/%d (%s, %d ranks, %s%s) failed%s; stopping" % (
                    i + 1, len(jobs), cname, n, kind, tag,
                    " (compare exits 1 when the strategies' results differ)"
                    if p.returncode == 1 and kind == "compare" else ""), 1)
            with open(tmp) as f:
                doc = json.load(f)
            os.unlink(tmp)
            if kind == "run":
                sm = doc.get("summary") or {}
                kernel_runs.append({"round": r + 1, "class": cname, "ranks": n, "strategy": order[0],
                                    "exit_status": p.returncode, "wall_seconds": wall, "command": cmd,
                                    "summary": {k: sm.get(k) for k in (
                                        "multiplies", "seconds_per_multiply_median", "kernel_seconds_max",
                                        "wait_seconds_max", "gflops", "repetition_seconds")}})
                continue
            tol = doc.get("tolerance", 1e-10)
            rows = [row_summary(row) for row in doc.get("rows", [])]
            if len(rows) != len(order):
                fail("job %d/%d (%s, %d ranks%s): %d rows in its JSON, expected %d"
                     % (i + 1, len(jobs), cname, n, tag, len(rows), len(order)), 1)
            for row in rows:
                rd = row["relative_difference"]
                if rd is None or not rd <= tol:
                    fail("job %d/%d (%s, %d ranks%s): %s's result differs from %s's by %r (tolerance %g)"
                         % (i + 1, len(jobs), cname, n, tag, row["strategy"], order[0], rd, tol), 1)
            entry = {"round": r + 1, "class": cname, "ranks": n, "order": order, "exit_status": p.returncode,
                     "wall_seconds": wall, "tolerance": tol, "command": cmd, "rows": rows}
            if which == "baseline":
                entry["ran_first"] = r % 2 == 1
                base_runs.append(entry)
                if base_meta is None:
                    base_meta = doc.get("metadata")
                continue
            if plexus_meta is None:
                plexus_meta = doc.get("metadata")
            runs.append(entry)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    load_after = loadavg()
    log("all %d jobs done in %.0f s" % (len(jobs), time.time() - t_start))

    classes, rows, tgts = analyse(opts, strategies, runs, kernel_runs)
    if base is not None:
        base["plexus_metadata"] = base_meta
        base["rows"] = compare_builds(opts, strategies, runs, base_runs)
        base["runs"] = base_runs
    meta = {
        "date_utc": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "command_line": [sys.argv[0]] + list(argv),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "busy_machine": busy,
        # What the jobs ran under beyond the command line: Open MPI's parameters, OpenBLAS's,
        # glibc's and plexus's variables from the environment (OMPI_MCA_osc_sm_backing_directory,
        # for one, moves h2o; OPENBLAS_CORETYPE moves dense ticks and DBCSR's BLAS;
        # GLIBC_TUNABLES=glibc.malloc.hugetlb=1 moves DBCSR where fresh pages are dear).
        "job_environment": {k: v for k, v in sorted(env.items())
                            if k.startswith(("OMPI_MCA_", "PLEXUS_", "OPENBLAS_", "GLIBC_TUNABLES"))},
        "os_costs": costs,
        "os_costs_why_not": costs_why_not,
        "seconds_total": time.time() - t_start,
        "timing": {"rounds": opts.rounds, "repetitions_per_job": opts.class_repetitions,
                   "warm_up": opts.warm_up if opts.warm_up is not None else
                   ((plexus_meta or {}).get("timing") or {}).get("warm_up"),
                   "statistic": "median over rounds of each job's median multiply time"},
        "plexus_metadata": plexus_meta,
    }
    doc = {
        "schema": SCHEMA,
        "benchmark": "scaling_bench",
        "metadata": meta,
        "options": {"build": build, "ranks": opts.ranks, "classes": opts.classes, "strategies": strategies,
                    "rounds": opts.rounds, "repetitions": opts.repetitions,
                    "class_repetitions": opts.class_repetitions, "warm_up": opts.warm_up,
                    "scale": opts.scale, "quick": opts.quick, "mpiexec": launcher,
                    "kernel_runs": opts.kernel_runs, "baseline": base_dir},
        "classes": classes,
        "rows": rows,
        "targets": tgts,
        "missing": {
            "ticks": "null for a strategy whose reports carry no ticks (e.g. dbcsr)",
        },
        "runs": runs,
        "kernel_runs": kernel_runs,
        # --baseline: the other build, its compare jobs and the speed-ups (null without it)
        "baseline": base,
    }
    print(text_report(opts, strategies, classes, tgts, meta, base))
    write_json(out_path, doc, opts.force)
    print("wrote %s" % out_path)
    if opts.check:
        problems = check_json(out_path, opts, strategies)
        if problems:
            for pr in problems:
                sys.stderr.write("scaling_bench: check: %s\n" % pr)
            fail("JSON check failed: %s" % out_path, 1)
        print("JSON check passed: %s" % out_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
