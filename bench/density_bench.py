#!/usr/bin/env python3
"""Figures of the density-matrix solvers (issue 10), in one run on an otherwise idle machine.

1. h2o-32 (the real matrices, <data>/h2o-32): one sign solve (mu given, and mu found) and one
   purification (canonical, TRS4) per multiply algorithm on each rank count: seconds per solve
   after reading H and S (slowest rank), and the band energy 2 Tr(P H), which every solve must
   give as the data's README publishes it (-97.146653107 Ha, from a dense diagonalisation).
2. Linear scaling: the sign solver on the model generator (docs/model-generator.md) for several
   numbers of molecules at FilterEps = 1e-6, one rank: seconds, peak memory and occupancy of P
   against N, and the exponent of a least-squares fit of log(time) against log(N).
3. The multiplies inside the solver against plexus-bench's h2o rate (blocks of 23) measured in
   the same run, and the solver's own time between multiplies (target: below 10 % of the solve,
   reported as PASS or MISS per solve, never asserted).

Every solve is one job, `[mpiexec -n N] <build>/bin/plexus run ... --json <tmp>` with
OMP_NUM_THREADS=1 and no warm-up; this script only drives the jobs and collects their figures.
It writes one JSON (--json; default bench/results/density/density-<host>-<date>.json, an existing
file is refused unless --force) and prints the tables and an ASCII plot. Should a job fail, the
figures so far are written with "complete": false and the script exits 1.

With --baseline DIR (another build), every solve of parts 1 and 2 also runs with that build, right
before or after (the order alternates), and each row gets the baseline's seconds and the speed-up
baseline / this build: "before and after" in one run, one-off costs included.

--check re-reads the written JSON: every planned solve there with positive times, every h2o-32
energy equal to the published one (to 1e-7 Ha), the baseline's energies equal to this build's
(relative 1e-8), plexus-bench's figures present (exit 1 otherwise).

  python3 bench/density_bench.py [--build build] [--baseline DIR] [--data ../shared/data]
                                  [--ranks 1,2,4] [--strategies cannon,rma25d,ring]
                                  [--molecules 27,64,125,216,343] [--block 8] [--quick]
                                  [--json F] [--force] [--mpiexec CMD] [--check]
"""
import argparse
import datetime
import json
import math
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time

from bench_common import (add_output_options, available_strategies, check_baseline_strategies, check_output_path,
                          check_strategies, configure, default_json_path, fail, first_line, int_list, job_environment,
                          launcher as mpi_launcher, loadavg, log, name_list, plexus_program, plugin_listing,
                          program_version, UsageError, write_json)

configure("density_bench", "density")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
# h2o-32's band energy 2 Tr(P H) from a dense diagonalisation (the data's README), and how close a
# solve must come to it: the README gives nine decimals, the solvers converge to 1e-9 in P.
PUBLISHED_BAND_ENERGY = -97.146653107
ENERGY_TOLERANCE = 1e-7
SAME_ENERGY_RELATIVE = 1e-8  # this build against the baseline, one solve
OVERHEAD_TARGET = 0.10
SOLVERS = [("sign (mu given)", ["--set", "Solver=sign", "--set", "sign/Mu=0.0179"]),
           ("sign (mu found)", ["--set", "Solver=sign", "--set", "sign/Electrons=256"]),
           ("canonical", ["--set", "Solver=purification", "--set", "purification/Electrons=256"]),
           ("trs4", ["--set", "Solver=purification", "--set", "purification/Electrons=256", "--set",
                     "purification/Method=trs4"])]


class JobFailed(Exception):
    pass


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="density_bench.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="exit status: 0 done (whatever the 10 % target says), 1 a job failed or "
                                        "the check failed, 2 a usage error, 130 interrupted.")
    ap.add_argument("--build", default=os.path.join(REPO, "build"), metavar="DIR",
                    help="build directory holding bin/plexus and bin/plexus-bench (default: %(default)s)")
    ap.add_argument("--baseline", default=None, metavar="DIR",
                    help="another build: every solve of parts 1 and 2 also runs with it, back to back")
    ap.add_argument("--data", default=None, metavar="DIR",
                    help="the folder holding h2o-32/H.mtx.gz and S.mtx.gz (default: ../shared/data next to the "
                         "repository; part 1 is skipped where the default has no h2o-32, an error where --data "
                         "names a folder without it)")
    ap.add_argument("--ranks", default="1,2,4", metavar="N,N,...", help="rank counts of part 1 (default: %(default)s)")
    ap.add_argument("--strategies", default="cannon,rma25d,ring", metavar="LIST",
                    help="multiply algorithms of part 1 (default: %(default)s)")
    ap.add_argument("--molecules", default="27,64,125,216,343", metavar="N,N,...",
                    help="model sizes of part 2 (default: %(default)s)")
    ap.add_argument("--block", type=int, default=8, help="the model's block size (default: %(default)s)")
    ap.add_argument("--quick", action="store_true",
                    help="1 rank, the first strategy, the first 3 model sizes, plexus-bench --quick: for tests")
    add_output_options(ap, "bench/results/density/density-<host>-<date>.json",
                       "re-read the written JSON and check it (exit 1 if a solve or figure is missing or wrong)")
    o = ap.parse_args(argv)
    try:
        o.ranks = int_list(o.ranks, "--ranks")
        o.molecules = int_list(o.molecules, "--molecules")
        o.strategies = name_list(o.strategies, "--strategies", "strategy")
        if o.block < 1:
            raise UsageError("--block %d: give at least 1" % o.block)
    except UsageError as e:
        fail(str(e))
    if o.quick:
        o.ranks, o.strategies, o.molecules = [1], o.strategies[:1], o.molecules[:3]
    return o


def h2o_files(opts):
    """H's and S's paths, or None where part 1 is skipped (exit 2 where --data lacks them)."""
    data = opts.data if opts.data is not None else os.path.join(os.path.dirname(REPO), "shared", "data")
    h = os.path.join(data, "h2o-32", "H.mtx.gz")
    s = os.path.join(data, "h2o-32", "S.mtx.gz")
    if os.path.isfile(h) and os.path.isfile(s):
        return h, s
    if opts.data is not None:
        fail("--data %s: no h2o-32/H.mtx.gz and h2o-32/S.mtx.gz there" % opts.data)
    log("no h2o-32 under %s: part 1 is skipped (give --data DIR)" % data)
    return None


class Runs:
    """Runs each solve with the build, and with the baseline right before or after it (the order
    alternating from one solve to the next, so that neither build always goes first)."""

    def __init__(self, plexus, base_plexus, launcher, env, total):
        self.plexus, self.base_plexus, self.launcher, self.env = plexus, base_plexus, launcher, env
        self.count, self.jobs, self.total, self.t0 = 0, 0, total, time.time()

    def job(self, program, args, ranks, what):
        self.jobs += 1
        elapsed = time.time() - self.t0
        left = "" if self.jobs == 1 else ", about %.0f s left" % (elapsed / (self.jobs - 1) * (self.total - self.jobs + 1))
        log("job %d/%d: %s (elapsed %.0f s%s)" % (self.jobs, self.total, what, elapsed, left))
        with tempfile.NamedTemporaryFile(prefix="plexus-density-", suffix=".json", delete=False) as f:
            out = f.name
        cmd = [program, "run"] + args + ["--set", "Timing/WarmUp=0", "--json", out, "--log-level", "warn",
                                         "--no-params-file"]
        if ranks > 1:
            cmd = self.launcher + ["-n", str(ranks), "--bind-to", "none"] + cmd
        try:
            t0 = time.time()
            p = subprocess.run(cmd, env=self.env, capture_output=True, text=True)
            wall = time.time() - t0
            if p.returncode != 0:
                raise JobFailed("job %d (%s) exited with code %d: %s\n%s%s" % (
                    self.jobs, what, p.returncode, " ".join(shlex.quote(c) for c in cmd), p.stdout[-3000:],
                    p.stderr[-3000:]))
            with open(out) as f:
                j = json.load(f)
        finally:
            if os.path.exists(out):
                os.unlink(out)
        j["process_wall_seconds"] = wall
        return j

    def run(self, args, ranks, what):
        """This build's JSON and the baseline's (None without a baseline)."""
        self.count += 1
        if self.base_plexus is None:
            return self.job(self.plexus, args, ranks, what), None
        if self.count % 2:
            mine = self.job(self.plexus, args, ranks, what)
            return mine, self.job(self.base_plexus, args, ranks, what + " [baseline]")
        base = self.job(self.base_plexus, args, ranks, what + " [baseline]")
        return self.job(self.plexus, args, ranks, what), base


def against(row, base):
    """Adds the baseline's solve seconds, the speed-up and its energy (`base`: its JSON) to `row`;
    the text for the row's line, which flags an energy that differs from this build's."""
    if base is None:
        return ""
    b, eb = base["figures"]["solve_seconds"], base["figures"]["energy"]
    row["baseline_seconds"] = b
    row["speedup"] = b / row["seconds"] if row["seconds"] > 0 else None
    row["baseline_energy"] = eb
    differs = not same_energy(row["energy"], eb)
    return "  baseline %8.3f s  speed-up %5.2f%s" % (b, row["speedup"] or float("nan"),
                                                      "  (energy differs: %.9f)" % eb if differs else "")


def same_energy(a, b):
    return abs(a - b) <= SAME_ENERGY_RELATIVE * max(1.0, abs(a))


def fit_exponent(xs, ys):
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx if sxx > 0 else None


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


def solve_row(j):
    """The solve after reading H and S, its multiplies, the fraction outside them (the solver's own
    figures, maxima over ranks) and the energy."""
    f, s = j["figures"], j["summary"]
    return {"seconds": f["solve_seconds"], "read_seconds": f["read_seconds"], "run_seconds": j["run_seconds"][-1],
            "multiply_seconds": f["multiply_seconds"], "overhead": f["overhead_fraction"],
            "multiplies": s["multiplies"], "gflops": s["gflops"], "energy": f["energy"],
            "process_wall_seconds": j["process_wall_seconds"], "loadavg": (loadavg() or [None])[0]}


def h2o_part(opts, runs, files, out):
    h, s = files
    problem = ["--set", "Problem/Generator=matrix-market", "--set", "Problem/FileH=" + h, "--set",
               "Problem/FileS=" + s]
    print("h2o-32: seconds per solve after reading (slowest rank), multiplies, time outside them")
    for np_ in opts.ranks:
        for st in opts.strategies:
            for name, args in SOLVERS:
                j, base = runs.run(problem + args + ["--set", "Communication/Strategy=" + st], np_,
                                   "h2o-32, %s, %s, %d rank(s)" % (name, st, np_))
                row = {"ranks": np_, "strategy": st, "solver": name}
                row.update(solve_row(j))
                row["iterations"] = j["figures"]["iterations"]
                row["energy_error"] = row["energy"] - PUBLISHED_BAND_ENERGY
                out["h2o"].append(row)
                vs = against(row, base)
                flag = "" if abs(row["energy_error"]) <= ENERGY_TOLERANCE else "  (published: %.9f)" % \
                    PUBLISHED_BAND_ENERGY
                print("  %d rank(s) %-7s %-16s %8.3f s  %4d multiplies  overhead %5.1f %%  E = %.9f%s%s" %
                      (np_, st, name, row["seconds"], row["multiplies"], 100 * row["overhead"], row["energy"], flag,
                       vs))
                sys.stdout.flush()


def model_part(opts, runs, out):
    print("model, sign at FilterEps 1e-6, 1 rank, blocks of %d:" % opts.block)
    for n in opts.molecules:
        args = ["--set", "Solver=sign", "--set", "Problem/Generator=model", "--set", "Problem/Molecules=%d" % n,
                "--set", "Problem/BlockSizes=%d" % opts.block, "--set", "sign/Electrons=%d" % (n * opts.block),
                "--set", "sign/FilterEps=1e-6", "--set", "sign/Tolerance=1e-7"]
        j, base = runs.run(args, 1, "model, %d molecules" % n)
        row = {"molecules": n, "n": n * opts.block}
        row.update(solve_row(j))
        row.update({"peak_memory_bytes": j["summary"]["peak_memory_bytes_max"],
                    "occupancy_P": j["figures"]["occupancy_P"], "sign_evaluations": j["figures"]["sign_evaluations"],
                    "iterations": j["figures"]["sign_iterations_total"], "energy_per_molecule": row["energy"] / n})
        out["model"].append(row)
        vs = against(row, base)
        print("  N = %4d  n = %6d  %8.3f s  peak %7.1f MiB  occupancy(P) %.3f  %d evaluations, %d steps%s" %
              (n, row["n"], row["seconds"], row["peak_memory_bytes"] / 2 ** 20, row["occupancy_P"],
               row["sign_evaluations"], row["iterations"], vs))
        sys.stdout.flush()
    if len(out["model"]) >= 2:
        xs = [r["molecules"] for r in out["model"]]
        out["model_fit"] = {
            "time_exponent": fit_exponent(xs, [r["seconds"] for r in out["model"]]),
            "time_per_step_exponent": fit_exponent(xs, [r["seconds"] / r["iterations"] for r in out["model"]]),
            "memory_exponent": fit_exponent(xs, [r["peak_memory_bytes"] for r in out["model"]])}
        fit = out["model_fit"]
        if None not in fit.values():
            print("  fit: time ~ N^%.2f, time per sign step ~ N^%.2f, peak memory ~ N^%.2f" %
                  (fit["time_exponent"], fit["time_per_step_exponent"], fit["memory_exponent"]))
        print(ascii_loglog([(r["molecules"], r["seconds"]) for r in out["model"]], xlabel="molecules N"))


def bench_part(opts, build, env, out):
    """plexus-bench's h2o class (blocks of 23), the yardstick of the solver's multiply rate."""
    prog = os.path.join(build, "bin", "plexus-bench")
    log("plexus-bench --classes h2o%s" % (" --quick" if opts.quick else ""))
    with tempfile.NamedTemporaryFile(prefix="plexus-density-", suffix=".json", delete=False) as f:
        bj = f.name
    try:
        cmd = [prog, "--classes", "h2o", "--repeat", "2", "--json", bj] + (["--quick"] if opts.quick else [])
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise JobFailed("plexus-bench exited with code %d: %s\n%s%s" % (p.returncode, " ".join(cmd),
                                                                          p.stdout[-3000:], p.stderr[-3000:]))
        with open(bj) as f:
            out["plexus_bench_h2o"] = json.load(f)
    finally:
        if os.path.exists(bj):
            os.unlink(bj)
    one = [r for r in out["h2o"] if r["ranks"] == 1]
    if one:
        print("1 rank: solver multiplies up to %.1f GFLOP/s (median multiply) against plexus-bench h2o; see the JSON"
              % max(r["gflops"] for r in one))


def overhead_report(out):
    """The solver's own time against the 10 % target, per h2o-32 solve (reported, never asserted)."""
    rows = out["h2o"]
    if not rows:
        return
    miss = [r for r in rows if not r["overhead"] < OVERHEAD_TARGET]
    out["overhead_target"] = {"threshold": OVERHEAD_TARGET, "solves": len(rows), "pass": len(rows) - len(miss),
                              "miss": [{k: r[k] for k in ("ranks", "strategy", "solver", "overhead")} for r in miss]}
    print("the solver's own time below %d %% of the solve (reported, never asserted): PASS in %d of %d solves%s" %
          (100 * OVERHEAD_TARGET, len(rows) - len(miss), len(rows),
           "; MISS: " + ", ".join("%s %s %d rank(s) %.1f %%" % (r["solver"], r["strategy"], r["ranks"],
                                                               100 * r["overhead"]) for r in miss) if miss else ""))


def check_json(path):
    """Re-reads the file: the problems found (empty: the check passed)."""
    with open(path) as f:
        doc = json.load(f)
    problems = []
    if doc.get("complete") is not True:
        problems.append("the run is not complete: %s" % doc.get("failure", "no 'complete' key"))
    opts = doc.get("options", {})
    has_baseline = doc.get("baseline") is not None

    def positive(row, key, where):
        v = row.get(key)
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            problems.append("%s: %s = %r, expected a positive number" % (where, key, v))

    def energies(row, where):
        if has_baseline:
            positive(row, "baseline_seconds", where)
            positive(row, "speedup", where)
            if not (isinstance(row.get("baseline_energy"), float) and same_energy(row["energy"], row["baseline_energy"])):
                problems.append("%s: the baseline's energy %r differs from this build's %r" %
                                (where, row.get("baseline_energy"), row["energy"]))

    if doc.get("h2o_files") is not None:
        planned = [(n, s, name) for n in opts["ranks"] for s in opts["strategies"] for name, _ in SOLVERS]
        got = [(r.get("ranks"), r.get("strategy"), r.get("solver")) for r in doc.get("h2o", [])]
        if got != planned:
            problems.append("h2o-32: %d solves, %d planned (%s)" % (len(got), len(planned),
                                                                    ", ".join("%s %s %s" % p for p in planned
                                                                              if p not in got) or "order differs"))
        for r in doc.get("h2o", []):
            where = "h2o-32 %s %s %s rank(s)" % (r.get("solver"), r.get("strategy"), r.get("ranks"))
            for k in ("seconds", "multiplies", "iterations"):
                positive(r, k, where)
            e = r.get("energy")
            if not (isinstance(e, float) and abs(e - PUBLISHED_BAND_ENERGY) <= ENERGY_TOLERANCE):
                problems.append("%s: band energy %r, published %.9f (tolerance %g Ha)" %
                                (where, e, PUBLISHED_BAND_ENERGY, ENERGY_TOLERANCE))
                continue
            energies(r, where)
        if "overhead_target" not in doc and doc.get("h2o"):
            problems.append("no overhead_target")
    got = [r.get("molecules") for r in doc.get("model", [])]
    if got != opts.get("molecules"):
        problems.append("model: sizes %s, planned %s" % (got, opts.get("molecules")))
    for r in doc.get("model", []):
        where = "model %s molecules" % r.get("molecules")
        for k in ("seconds", "multiplies", "iterations", "peak_memory_bytes", "occupancy_P"):
            positive(r, k, where)
        if not (isinstance(r.get("energy"), float) and math.isfinite(r["energy"])):
            problems.append("%s: energy %r" % (where, r.get("energy")))
            continue
        energies(r, where)
    if len(doc.get("model", [])) >= 2 and not isinstance(doc.get("model_fit", {}).get("time_exponent"), float):
        problems.append("no model_fit.time_exponent")
    pb = doc.get("plexus_bench_h2o")
    if not (isinstance(pb, dict) and pb.get("classes")):
        problems.append("no plexus-bench h2o figures")
    for k in ("date_utc", "host", "command_line", "load_average_before", "load_average_after", "build"):
        if k not in doc.get("metadata", {}):
            problems.append("metadata: no '%s'" % k)
    return problems


def main(argv):
    opts = parse_args(argv)
    build = os.path.abspath(opts.build)
    plexus = plexus_program(opts.build)
    if not os.access(os.path.join(build, "bin", "plexus-bench"), os.X_OK):
        fail("--build: no plexus-bench at '%s' (part 3 needs it: cmake --build %s --target plexus-bench)"
             % (os.path.join(build, "bin", "plexus-bench"), opts.build))
    base_plexus = plexus_program(opts.baseline, "--baseline") if opts.baseline is not None else None
    launcher = mpi_launcher(opts.mpiexec) if max(opts.ranks) > 1 else None
    env = job_environment()
    comms, _ = available_strategies(plugin_listing(plexus, env))
    check_strategies(opts.strategies, comms)
    if base_plexus is not None:
        base_comms, _ = available_strategies(plugin_listing(base_plexus, env))
        check_baseline_strategies(opts.strategies, base_comms, base_plexus)
    files = h2o_files(opts)
    created_default = opts.json is None
    out_path = opts.json or default_json_path("density")
    check_output_path(out_path, opts.force, created_default)

    load_before = loadavg()
    if load_before is not None and load_before[0] > 0.5:
        log("WARNING: 1-minute load average %.2f > 0.5: the machine is not idle; figures will be noisy"
            % load_before[0])
    per_solve = 2 if base_plexus else 1
    total = per_solve * ((len(opts.ranks) * len(opts.strategies) * len(SOLVERS) if files else 0) + len(opts.molecules))
    log("%d jobs: %s%d model size(s)%s, then plexus-bench" % (
        total, "h2o-32 (%d solvers x %d strategies x %d rank counts), " % (len(SOLVERS), len(opts.strategies),
                                                                       len(opts.ranks)) if files else "",
        len(opts.molecules), ", each also with the baseline" if base_plexus else ""))
    out = {"schema": 2, "benchmark": "density_bench", "complete": False,
           "options": {"ranks": opts.ranks, "strategies": opts.strategies, "molecules": opts.molecules,
                       "block": opts.block, "quick": opts.quick, "mpiexec": launcher},
           "h2o_files": list(files) if files else None, "published_band_energy": PUBLISHED_BAND_ENERGY,
           "h2o": [], "model": [],
           "metadata": {"command_line": [sys.executable] + [os.path.abspath(__file__)] + list(argv),
                        "host": socket.gethostname(), "cpus": os.cpu_count(), "load_average_before": load_before,
                        "build": {"dir": build, "version": program_version(plexus, env)},
                        "job_environment": {k: v for k, v in sorted(env.items())
                                            if k.startswith(("OMPI_MCA_", "PLEXUS_", "OMP_", "OPENBLAS_",
                                                             "GLIBC_TUNABLES"))}}}
    if base_plexus:
        out["baseline"] = {"dir": os.path.abspath(opts.baseline), "version": program_version(base_plexus, env)}
        print("this build: %s (%s); baseline: %s (%s)" % (build, first_line(out["metadata"]["build"]["version"]),
                                                        out["baseline"]["dir"], first_line(out["baseline"]["version"])))
    runs = Runs(plexus, base_plexus, launcher, env, total)
    code = 0
    try:
        if files:
            h2o_part(opts, runs, files, out)
        model_part(opts, runs, out)
        bench_part(opts, build, env, out)
        overhead_report(out)
        out["complete"] = True
    except JobFailed as e:
        sys.stderr.write(str(e) + "\n")
        out["failure"] = str(e).splitlines()[0]
        log("a job failed: the figures so far go to the JSON, marked incomplete")
        code = 1
    except KeyboardInterrupt:
        out["failure"] = "interrupted"
        log("interrupted: the figures so far go to the JSON, marked incomplete")
        code = 130
    out["metadata"]["load_average_after"] = loadavg()
    out["metadata"]["date_utc"] = datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
    write_json(out_path, out, opts.force)
    print("wrote", out_path)
    if code == 0 and opts.check:
        problems = check_json(out_path)
        if problems:
            for p in problems:
                sys.stderr.write("density_bench: check: %s\n" % p)
            fail("JSON check failed (%d problem(s))" % len(problems), 1)
        print("JSON check passed")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
