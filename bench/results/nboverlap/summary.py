#!/usr/bin/env python3
"""Summary of plexus-nboverlap-bench and plexus-symmcube-bench JSON files (no matplotlib: markdown
tables and an ASCII plot, as bench/density_bench.py does).

Per file and operation: a markdown table of the bandwidth at the median time, MB/s (10^6 B/s, the
paper's unit), for every case and size, the ratio of each overlapped case to the blocking one,
the parts the nboverlap component used, and the alpha-beta model's bandwidth; then an ASCII plot
of median bandwidth against size (log-log), one letter per case (the paper's Figure 5).

plexus-symmcube-bench files (recognised by their "benchmark" field): per file, the paper's Table I
(Variant original, baseline, optimized: time, GFLOP/s, speedup over the baseline), Table II
(optimized with NDup = 1..6: speedup over NDup = 1), the 2.5D rows or why they are missing, with
the counted bytes per rank, the alpha-beta model time where there is one, the result check and the
machine's load during the run; then, for several files, one line per N.

    python3 bench/results/nboverlap/summary.py bench/results/nboverlap/*.json [--no-plot]
"""
import json
import math
import sys

LETTERS = {"blocking": "b", "nboverlap": "n", "ppn": "p", "ndup1": "1"}


def human(b):
    if b >= 1 << 20 and b % (1 << 20) == 0:
        return f"{b >> 20} MiB"
    if b >= 1024 and b % 1024 == 0:
        return f"{b >> 10} KiB"
    return f"{b} B"


def plot(series, width=60, height=16):
    pts = [(x, y) for s in series.values() for x, y in s if y and y > 0]
    if not pts:
        return ""
    xs = [math.log10(x) for x, _ in pts]
    ys = [math.log10(y) for _, y in pts]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    if x1 == x0 or y1 == y0:
        return ""
    grid = [[" "] * width for _ in range(height)]
    for case, s in series.items():
        for x, y in s:
            if not y or y <= 0:
                continue
            c = int(round((math.log10(x) - x0) / (x1 - x0) * (width - 1)))
            r = height - 1 - int(round((math.log10(y) - y0) / (y1 - y0) * (height - 1)))
            grid[r][c] = LETTERS.get(case, "?") if grid[r][c] == " " else "*"
    lines = [f"MB/s (log) from {10 ** y0:.3g} to {10 ** y1:.3g}"]
    lines += ["|" + "".join(row) for row in grid]
    lines.append("+" + "-" * width)
    lines.append(f"bytes (log) from {human(int(round(10 ** x0)))} to {human(int(round(10 ** x1)))}; "
                 + ", ".join(f"{l} = {c}" for c, l in LETTERS.items() if c in series) + ", * = several")
    return "\n".join(lines)


def summarize(path, with_plot=True):
    with open(path) as f:
        d = json.load(f)
    p = d["parameters"]
    m = d["machine"]
    print(f"## {path.rsplit('/', 1)[-1]}\n")
    print(f"{p['ranks']} ranks = {p['nodes']} emulated nodes x {p['ranks_per_node']}, p = {p['ranks_per_collective']} "
          f"per collective, NDup {p['ndup']}, MinPartBytes {p['min_part_bytes']}, {p['repetitions']} repetitions "
          f"(+{p['warmup_rounds']} warm-up rounds); {m.get('cpu_model', '?')}, {m.get('online_cpus', '?')} cpus, "
          f"load {m.get('loadavg_1min_before', '?')} -> {m.get('loadavg_1min_after', '?')}; "
          f"all results checked: {d.get('all_validated')}")
    ab = d.get("alpha_beta")
    if ab:
        o, r = ab["fit_ordinary"], ab["fit_relative"]
        print(f"alpha-beta (ping-pong ranks {ab['ranks'][0]}-{ab['ranks'][1]}): relative fit alpha = "
              f"{r['alpha_seconds'] * 1e6:.2f} us, 1/beta = {1e-6 / r['beta_seconds_per_byte']:.0f} MB/s "
              f"(largest relative residual {r['max_relative_residual']:.2f}); ordinary fit alpha = "
              f"{o['alpha_seconds'] * 1e6:.2f} us, 1/beta = {1e-6 / o['beta_seconds_per_byte']:.0f} MB/s")
    print()
    rows = d["rows"]
    cases = [c for c in p["cases"]]
    for op in p["operations"]:
        sizes = sorted({r["bytes"] for r in rows if r["operation"] == op})
        get = {(r["bytes"], r["case"]): r for r in rows if r["operation"] == op}
        head = ["bytes"] + [f"{c} MB/s" for c in cases]
        head += [f"{c}/blocking" for c in cases if c != "blocking" and "blocking" in cases]
        if "nboverlap" in cases:
            head.append("parts")
        if ab:
            head.append("model MB/s")
        print(f"**{op}**, bandwidth 2(p-1)n/p over the median time:\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        series = {c: [] for c in cases}
        for b in sizes:
            cells = [human(b)]
            for c in cases:
                r = get.get((b, c))
                bw = r["bandwidth_bytes_per_second_at_median"] if r else None
                cells.append(f"{bw * 1e-6:.0f}" if bw else "-")
                series[c].append((b, bw * 1e-6 if bw else None))
            base = get.get((b, "blocking"))
            for c in cases:
                if c == "blocking" or "blocking" not in cases:
                    continue
                r = get.get((b, c))
                cells.append(f"{base['seconds_median'] / r['seconds_median']:.2f}" if r and base else "-")
            if "nboverlap" in cases:
                r = get.get((b, "nboverlap"))
                cells.append(str(r["parts_used"]) if r else "-")
            if ab:
                r = get.get((b, cases[0]))
                mb = r.get("model_bandwidth_bytes_per_second") if r else None
                cells.append(f"{mb * 1e-6:.0f}" if mb else "-")
            print("| " + " | ".join(cells) + " |")
        print()
        if with_plot:
            print("```")
            print(plot(series))
            print("```\n")


def fmt(v, f, scale=1.0):
    return f.format(v * scale) if isinstance(v, (int, float)) else "-"


def symmcube_table(rows, table, ratio_key, ratio_name):
    head = ["case", "median ms", "min ms", "GFLOP/s", ratio_name, "MB sent/rank", "MB recv/rank", "model ms",
            "model/measured", "check"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        if table not in r["tables"]:
            continue
        if not r["available"]:
            print(f"| {r['label']} | not available: {r.get('unavailable_reason', '')} |" + " |" * (len(head) - 2))
            continue
        cells = [r["label"], fmt(r["seconds_median"], "{:.1f}", 1e3), fmt(r["seconds_min"], "{:.1f}", 1e3),
                 fmt(r["gflops_at_median"], "{:.1f}"), fmt(r[ratio_key], "{:.2f}"),
                 fmt(r["bytes_sent_per_rank_max"], "{:.2f}", 1e-6), fmt(r["bytes_received_per_rank_max"], "{:.2f}", 1e-6),
                 fmt(r["model_seconds"], "{:.1f}", 1e3), fmt(r["model_over_measured"], "{:.2f}"),
                 "ok" if r["validated"] else "FAILED"]
        print("| " + " | ".join(cells) + " |")
    print()


def summarize_symmcube(path, d):
    p, m = d["parameters"], d["machine"]
    mesh = d.get("mesh") or {}
    print(f"## {path.rsplit('/', 1)[-1]}\n")
    side = mesh.get("mesh_side")
    print(f"{p['ranks']} ranks" + (f", mesh {side}x{side}x{side}" if side else "")
          + f"; D {p['n']} x {p['n']} ({p['blocks_per_side']} x {p['blocks_per_side']} blocks of {p['block']}, "
          f"occupancy {d.get('d_occupancy', p['occupancy']):.3g}); kernel {p['kernel']}; MinPartBytes "
          f"{p['min_part_bytes']}; {p['repetitions']} repetitions (+{p['warmup_rounds']} warm-up rounds); "
          f"{m.get('cpu_model', '?')}, {m.get('online_cpus', '?')} cpus, load {m.get('loadavg_1min_before', '?')} -> "
          f"{m.get('loadavg_1min_after', '?')}; all results checked: {d.get('all_validated')}")
    chosen = {k: v for k, v in m.get("mpi_environment", {}).items() if k.startswith("OMPI_MCA_coll")}
    if chosen:
        print("collective algorithms chosen by hand: " + ", ".join(f"{k}={v}" for k, v in sorted(chosen.items())))
    rc = d.get("run_conditions")
    if rc:
        loads = rc.get("loadavg_1min_samples") or [0]
        print(f"run conditions ({rc['samples']} samples every {rc['sample_interval_seconds']} s): a compiler in "
              f"{rc['samples_with_compiler']}, another mpiexec in {rc['samples_with_other_mpiexec']}, a test or plexus "
              f"process in {rc['samples_with_test_or_plexus_process']}, a busy other process in "
              f"{rc['samples_with_busy_other_process']}; 1-min load {min(loads):.2f} .. {max(loads):.2f}; "
              f"`uptime` before: {rc['uptime_before']}; after: {rc['uptime_after']}")
    ab = d.get("alpha_beta")
    if ab:
        r = ab["fit_relative"]
        print(f"alpha-beta (ping-pong ranks {ab['ranks'][0]}-{ab['ranks'][1]}, relative fit): alpha = "
              f"{r['alpha_seconds'] * 1e6:.2f} us, 1/beta = {1e-6 / r['beta_seconds_per_byte']:.0f} MB/s")
    if not d.get("model_terms_available"):
        print("model: the reports carry no model_latency_terms / model_bandwidth_bytes ('-')")
    print()
    rows = d["rows"]
    print(f"**Table I** (Variant; speedup = GFLOP/s over the baseline's, same run):\n")
    symmcube_table(rows, "I", "speedup_vs_baseline", "vs baseline")
    print(f"**Table II** (Variant optimized; speedup = GFLOP/s over NDup=1's, same run):\n")
    symmcube_table(rows, "II", "speedup_vs_ndup1", "vs NDup=1")
    rep = d.get("replication") or {}
    if rep.get("asked"):
        if rep.get("available"):
            print(f"**2.5D** (Replication = {rep['asked']}; speedup over optimized NDup=1's):\n")
            symmcube_table(rows, "2.5D", "speedup_vs_ndup1", "vs NDup=1")
        else:
            print(f"**2.5D** (Replication = {rep['asked']}): not available: {rep.get('reason', '')}\n")


def symmcube_across(docs):
    print("## Across sizes\n")
    head = ["N", "libnbc ireduce", "baseline GFLOP/s", "original/baseline", "optimized/baseline (Table I NDup)", "NDup=1 GFLOP/s",
            "best NDup (speedup over NDup=1)", "2.5D over baseline (NDup)", "MB sent/rank (baseline)",
            "model/measured (baseline)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    def order(x):
        env = x[1]["machine"].get("mpi_environment", {})
        return (x[1]["parameters"]["n"], env.get("OMPI_MCA_coll_libnbc_ireduce_algorithm", ""))
    for path, d in sorted(docs, key=order):
        rows = [r for r in d["rows"] if r["available"]]
        by = {(r["variant"], r["ndup"], r["replication"]): r for r in rows}
        base = next((r for r in rows if r["variant"] == "baseline"), None)
        orig = next((r for r in rows if r["variant"] == "original"), None)
        k = d["parameters"]["ndup_table1"]
        opt = by.get(("optimized", k, None))
        one = by.get(("optimized", 1, None))
        t2 = [r for r in rows if "II" in r["tables"]]
        best = max(t2, key=lambda r: r["gflops_at_median"] or 0) if t2 else None
        env = d["machine"].get("mpi_environment", {})
        ireduce = {"1": "chain", "2": "binomial", "3": "rabenseifner"}.get(
            env.get("OMPI_MCA_coll_libnbc_ireduce_algorithm", ""), "default")
        cells = [str(d["parameters"]["n"]), ireduce, fmt(base and base["gflops_at_median"], "{:.1f}"),
                 fmt(orig and orig["speedup_vs_baseline"], "{:.2f}"),
                 fmt(opt and opt["speedup_vs_baseline"], "{:.2f}") + f" ({k})",
                 fmt(one and one["gflops_at_median"], "{:.1f}"),
                 (f"{best['ndup']} ({fmt(best['speedup_vs_ndup1'], '{:.2f}')})" if best else "-"),
                 ", ".join(f"{fmt(r['speedup_vs_baseline'], '{:.2f}')} ({r['ndup']})"
                           for r in rows if r["replication"] is not None) or "-",
                 fmt(base and base["bytes_sent_per_rank_max"], "{:.1f}", 1e-6),
                 fmt(base and base["model_over_measured"], "{:.3f}")]
        print("| " + " | ".join(cells) + " |")
    print()


def main(argv):
    with_plot = "--no-plot" not in argv
    paths = [a for a in argv if a != "--no-plot"]
    if not paths:
        print(__doc__)
        return 2
    symmcube = []
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        if d.get("benchmark") == "plexus-symmcube-bench":
            summarize_symmcube(path, d)
            symmcube.append((path, d))
        else:
            summarize(path, with_plot)
    if len(symmcube) > 1:
        symmcube_across(symmcube)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
