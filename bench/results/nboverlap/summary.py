#!/usr/bin/env python3
"""Summary of plexus-nboverlap-bench JSON files (no matplotlib: markdown tables and an ASCII plot,
as bench/density_bench.py does).

Per file and operation: a markdown table of the bandwidth at the median time, MB/s (10^6 B/s, the
paper's unit), for every case and size, the ratio of each overlapped case to the blocking one,
the parts the nboverlap component used, and the alpha-beta model's bandwidth; then an ASCII plot
of median bandwidth against size (log-log), one letter per case (the paper's Figure 5).

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


def main(argv):
    with_plot = "--no-plot" not in argv
    paths = [a for a in argv if a != "--no-plot"]
    if not paths:
        print(__doc__)
        return 2
    for path in paths:
        summarize(path, with_plot)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
