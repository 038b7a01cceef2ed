#!/usr/bin/env python3
"""Figures of the density-matrix solvers (issue 10), in one run on an otherwise idle machine.

1. h2o-32 (the real matrices): one sign solve (mu given, and mu found) and one purification
   (canonical, TRS4) per multiply algorithm on 1, 2 and 4 ranks: seconds per solve.
2. Linear scaling: the sign solver on the model generator (docs/model-generator.md) for several
   numbers of molecules at FilterEps = 1e-6: seconds, peak memory and occupancy of P against N,
   and the exponent of a least-squares fit of log(time) against log(N).
3. The multiplies inside the solver against plexus-bench's h2o rate (blocks of 23) measured in
   the same run, and the solver's own time between multiplies (target: below 10 % of the solve).

Every solve is `plexus run ... --json`; this script only drives and collects. Writes one JSON
(--json, default bench/results/density/density-bench.json) and prints the tables and an ASCII plot.

With --baseline DIR (another build), every solve of parts 1 and 2 also runs with that build, right
before or after (the order alternates), and each row gets the baseline's seconds and the speed-up
baseline / this build: "before and after" in one run, one-off costs included (no warm-up).

  python3 bench/density_bench.py [--build build] [--baseline DIR] [--data ../shared/data]
                                  [--ranks 1,2,4] [--strategies cannon,rma25d,ring]
                                  [--molecules 27,64,125,216,343] [--block 8] [--quick] [--json F]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time


def run_plexus(args, ranks, build, env):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [os.path.join(build, "bin", "plexus"), "run"] + args + ["--set", "Timing/WarmUp=0", "--json", out,
                                                                  "--log-level", "warn", "--no-params-file"]
    if ranks > 1:
        cmd = ["mpiexec", "--oversubscribe", "-n", str(ranks)] + cmd
    t0 = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-3000:] + p.stderr[-3000:])
        raise SystemExit("failed: " + " ".join(cmd))
    with open(out) as f:
        j = json.load(f)
    os.unlink(out)
    j["process_wall_seconds"] = wall
    return j


def loadavg():
    return os.getloadavg()[0]


def version(build):
    p = subprocess.run([os.path.join(build, "bin", "plexus"), "--version"], capture_output=True, text=True)
    return p.stdout.splitlines()[0] if p.returncode == 0 and p.stdout else "unknown"


class Runs:
    """Runs each solve with the build, and with the baseline right before or after it (the order
    alternating from one solve to the next, so that neither build always goes first)."""

    def __init__(self, build, baseline, env):
        self.build, self.baseline, self.env, self.count = build, baseline, env, 0

    def run(self, args, ranks):
        """This build's JSON and the baseline's (None without a baseline)."""
        self.count += 1
        if self.baseline is None:
            return run_plexus(args, ranks, self.build, self.env), None
        if self.count % 2:
            mine = run_plexus(args, ranks, self.build, self.env)
            return mine, run_plexus(args, ranks, self.baseline, self.env)
        base = run_plexus(args, ranks, self.baseline, self.env)
        return run_plexus(args, ranks, self.build, self.env), base


def against(row, base):
    """Adds the baseline's solve seconds, the speed-up and its energy (`base`: its JSON) to `row`;
    the text for the row's line, which flags an energy that differs from this build's."""
    if base is None:
        return ""
    b, eb = base["figures"]["solve_seconds"], base["figures"]["energy"]
    row["baseline_seconds"] = b
    row["speedup"] = b / row["seconds"] if row["seconds"] > 0 else float("nan")
    row["baseline_energy"] = eb
    differs = abs(row["energy"] - eb) > 1e-8 * max(1.0, abs(row["energy"]))
    return "  baseline %8.3f s  speed-up %5.2f%s" % (b, row["speedup"], "  (energy differs: %.9f)" % eb if differs else "")


def fit_exponent(xs, ys):
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx if sxx > 0 else float("nan")


def ascii_loglog(points, width=56, height=14, xlabel="N", ylabel="seconds"):
    xs = [math.log10(x) for x, _ in points]
    ys = [math.log10(y) for _, y in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    if x1 == x0 or y1 == y0:
        return ""
    grid = [[" "] * width for _ in range(height)]
    for x, y in zip(xs, ys):
        c = int(round((x - x0) / (x1 - x0) * (width - 1)))
        r = height - 1 - int(round((y - y0) / (y1 - y0) * (height - 1)))
        grid[r][c] = "*"
    lines = ["%s (log) from %.3g to %.3g" % (ylabel, 10 ** y0, 10 ** y1)]
    lines += ["|" + "".join(row) for row in grid]
    lines.append("+" + "-" * width)
    lines.append("%s (log) from %.3g to %.3g" % (xlabel, 10 ** x0, 10 ** x1))
    return "\n".join(lines)


def solver_overhead(j):
    # The solve after reading H and S, its multiplies, and the fraction outside them (the
    # solver's own figures, maxima over ranks).
    f = j["figures"]
    return f["solve_seconds"], f["multiply_seconds"], f["overhead_fraction"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--baseline", default=None, metavar="DIR",
                    help="another build: every solve of parts 1 and 2 also runs with it, back to back")
    ap.add_argument("--data", default=os.path.join("..", "shared", "data"))
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--strategies", default="cannon,rma25d,ring")
    ap.add_argument("--molecules", default="27,64,125,216,343")
    ap.add_argument("--block", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="1 rank, one strategy, 3 small sizes")
    ap.add_argument("--json", default=os.path.join("bench", "results", "density", "density-bench.json"))
    o = ap.parse_args()
    for b in [o.build] + ([o.baseline] if o.baseline else []):
        if not os.access(os.path.join(b, "bin", "plexus"), os.X_OK):
            ap.error("%s/bin/plexus is not there or not executable (build it first)" % b)
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_MCA_mpi_yield_when_idle="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    ranks = [int(r) for r in o.ranks.split(",")]
    strategies = o.strategies.split(",")
    molecules = [int(m) for m in o.molecules.split(",")]
    if o.quick:
        ranks, strategies, molecules = [1], strategies[:1], molecules[:3]
    out = {"machine": {"cpus": os.cpu_count(), "loadavg_start": loadavg()}, "h2o": [], "model": [],
           "build": {"dir": o.build, "version": version(o.build)}}
    if o.baseline:
        out["baseline"] = {"dir": o.baseline, "version": version(o.baseline)}
        print("this build: %s (%s); baseline: %s (%s)" % (o.build, out["build"]["version"], o.baseline,
                                                        out["baseline"]["version"]))
    runs = Runs(o.build, o.baseline, env)

    # 1. h2o-32 through every strategy.
    h = os.path.join(o.data, "h2o-32", "H.mtx.gz")
    s = os.path.join(o.data, "h2o-32", "S.mtx.gz")
    problem = ["--set", "Problem/Generator=matrix-market", "--set", "Problem/FileH=" + h, "--set",
               "Problem/FileS=" + s]
    solvers = [("sign (mu given)", ["--set", "Solver=sign", "--set", "sign/Mu=0.0179"]),
               ("sign (mu found)", ["--set", "Solver=sign", "--set", "sign/Electrons=256"]),
               ("canonical", ["--set", "Solver=purification", "--set", "purification/Electrons=256"]),
               ("trs4", ["--set", "Solver=purification", "--set", "purification/Electrons=256", "--set",
                         "purification/Method=trs4"])]
    if os.path.exists(h):
        print("h2o-32: seconds per solve after reading (slowest rank), multiplies, time outside them")
        for np_ in ranks:
            for st in strategies:
                for name, args in solvers:
                    j, base = runs.run(problem + args + ["--set", "Communication/Strategy=" + st], np_)
                    total, mult, over = solver_overhead(j)
                    row = {"ranks": np_, "strategy": st, "solver": name, "seconds": total,
                           "read_seconds": j["figures"]["read_seconds"], "run_seconds": j["run_seconds"][-1],
                           "multiply_seconds": mult, "overhead": over, "multiplies": j["summary"]["multiplies"],
                           "gflops": j["summary"]["gflops"], "energy": j["figures"]["energy"],
                           "iterations": j["figures"]["iterations"], "loadavg": loadavg()}
                    out["h2o"].append(row)
                    vs = against(row, base)
                    print("  %d rank(s) %-7s %-16s %8.3f s  %4d multiplies  overhead %5.1f %%  E = %.9f%s" %
                          (np_, st, name, total, row["multiplies"], 100 * over, row["energy"], vs))
    else:
        print("no %s: h2o-32 skipped" % h)

    # 2. Linear scaling on the model.
    print("model, sign at FilterEps 1e-6, 1 rank, blocks of %d:" % o.block)
    for n in molecules:
        args = ["--set", "Solver=sign", "--set", "Problem/Generator=model", "--set", "Problem/Molecules=%d" % n,
                "--set", "Problem/BlockSizes=%d" % o.block, "--set", "sign/Electrons=%d" % (n * o.block),
                "--set", "sign/FilterEps=1e-6", "--set", "sign/Tolerance=1e-7"]
        j, base = runs.run(args, 1)
        total, mult, over = solver_overhead(j)
        row = {"molecules": n, "n": n * o.block, "seconds": total, "multiply_seconds": mult, "overhead": over,
               "read_seconds": j["figures"]["read_seconds"],
               "peak_memory_bytes": j["summary"]["peak_memory_bytes_max"],
               "occupancy_P": j["figures"]["occupancy_P"], "sign_evaluations": j["figures"]["sign_evaluations"],
               "iterations": j["figures"]["sign_iterations_total"], "energy_per_molecule": j["figures"]["energy"] / n,
               "multiplies": j["summary"]["multiplies"], "gflops": j["summary"]["gflops"]}
        out["model"].append(row)
        row["energy"] = j["figures"]["energy"]
        vs = against(row, base)
        print("  N = %4d  n = %6d  %8.3f s  peak %7.1f MiB  occupancy(P) %.3f  %d evaluations, %d steps%s" %
              (n, row["n"], total, row["peak_memory_bytes"] / 2 ** 20, row["occupancy_P"], row["sign_evaluations"],
               row["iterations"], vs))
    if len(out["model"]) >= 2:
        xs = [r["molecules"] for r in out["model"]]
        out["model_fit"] = {
            "time_exponent": fit_exponent(xs, [r["seconds"] for r in out["model"]]),
            "time_per_step_exponent": fit_exponent(xs, [r["seconds"] / r["iterations"] for r in out["model"]]),
            "memory_exponent": fit_exponent(xs, [r["peak_memory_bytes"] for r in out["model"]])}
        print("  fit: time ~ N^%.2f, time per sign step ~ N^%.2f, peak memory ~ N^%.2f" %
              (out["model_fit"]["time_exponent"], out["model_fit"]["time_per_step_exponent"],
               out["model_fit"]["memory_exponent"]))
        print(ascii_loglog([(r["molecules"], r["seconds"]) for r in out["model"]], xlabel="molecules N"))

    # 3. The multiplies' rate against plexus-bench's h2o class (blocks of 23), same run.
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        bj = f.name
    subprocess.run([os.path.join(o.build, "bin", "plexus-bench"), "--classes", "h2o", "--repeat", "2", "--json", bj],
                   env=env, capture_output=True, text=True, check=True)
    with open(bj) as f:
        bench = json.load(f)
    os.unlink(bj)
    out["plexus_bench_h2o"] = bench
    one = [r for r in out["h2o"] if r["ranks"] == 1]
    if one:
        print("1 rank: solver multiplies %.1f GFLOP/s (median multiply) against plexus-bench h2o; see the JSON" %
              max(r["gflops"] for r in one))
    out["machine"]["loadavg_end"] = loadavg()
    os.makedirs(os.path.dirname(o.json) or ".", exist_ok=True)
    with open(o.json, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", o.json)


if __name__ == "__main__":
    main()
