#!/usr/bin/env python3
"""The seed papers' figures, measured here: runs the benchmarks, writes their JSON, draws the PNGs.

  python3 bench/paper_figures.py run  [--out DIR] [--ranks P] [--rates R1,R2] [--quick] ...
  python3 bench/paper_figures.py plot [--in DIR] [--out DIR]
  python3 bench/paper_figures.py check --in DIR

`run` measures, into DIR (default bench/results/papers), one JSON file per measurement and a
manifest.json that names them with the command, machine and date:

* PASC'17 (Lazzaro et al., DBCSR's 2.5D multiply): on P ranks (default 16, a 4x4 grid), the
  H2O-like, S-E-like and dense classes through `plexus compare` with cannon, rma25d Layers=1,
  rma25d Layers=4 and dbcsr (when its plugin is built): time per multiply, volume per rank against
  the model, peak memory; over TCP unshaped ('none') and at every rate of --rates over the
  emulated network (bench/shaped_network.sh), each as one shared link and per node (--nodes
  simulated nodes with a link each). Without root or iproute2 (or with --no-network) the network
  runs are left out with a message and the classes run over shared memory only ('shm').
* PASC'21 (Hähner et al., DCA++'s ring): plexus-g4-bench on P ranks, replicated against
  distributed with sub-ring sizes S = 1, 2, 4, ... P: time per measurement and G4 memory per rank.

`plot` reads DIR's manifest and draws docs/results/papers/*.png (needs matplotlib: Debian's
python3-matplotlib, `scripts/install-deps.sh --plots`). `check` validates a directory written by
`run` (used by the quick test). docs/results.md shows the figures beside the papers' claims.

Exit status: 0; 1 when a job fails or a check finds a problem; 2 for bad options (before any job
runs); 77 from plot without matplotlib.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The classes of the PASC'17 figure, sized for P ranks on a small machine (the paper's are CP2K's
# H2O-DFT-LS, S-E and a dense case at 400 to 2704 nodes); the quick sizes only exercise the path.
CLASSES = {
    "h2o": {"title": "H2O-like (blocks of 23, 10 %)", "sets": {"Problem/Blocks": 128, "Problem/BlockSizes": "23",
                                                              "Problem/Occupancy": 0.1}},
    "se": {"title": "S-E-like (blocks of 6, 1 %)", "sets": {"Problem/Blocks": 800, "Problem/BlockSizes": "6",
                                                           "Problem/Occupancy": 0.01}},
    "dense": {"title": "dense (blocks of 32)", "sets": {"Problem/Blocks": 48, "Problem/BlockSizes": "32",
                                                       "Problem/Occupancy": 1.0}},
}
QUICK_BLOCKS = {"h2o": 16, "se": 40, "dense": 8}
COMMON = {"Problem/Symmetric": "false", "Problem/Distribution": "block-cyclic", "Kernel/cpu/Threads": 1,
          "Timing/Rounds": 3}
STRATEGIES = ["cannon", "rma25d:Layers=1", "rma25d:Layers=4", "dbcsr"]


class UsageError(Exception):
    pass


def log(msg):
    print("paper_figures: " + msg, file=sys.stderr, flush=True)


def tool(build, name):
    path = os.path.join(build, "bin", name)
    if not os.access(path, os.X_OK):
        raise UsageError("%s not found (build the project first, or give --build DIR)" % path)
    return path


def have_strategy(plexus, name):
    out = subprocess.run([plexus, "plugins"], capture_output=True, text=True, check=False).stdout
    return any(line.split()[:2] == ["comm", name] for line in out.splitlines())


MPIEXEC = ["mpiexec"]


def mpiexec(ranks):
    exe = shutil.which(MPIEXEC[0])
    if exe is None:
        raise UsageError("%s not found (Open MPI: apt-get install openmpi-bin; or give --mpiexec)" % MPIEXEC[0])
    return [exe, "-n", str(ranks), "--bind-to", "none"]


def mpi_env():
    env = dict(os.environ)
    # As scripts/env.sh: root may run Open MPI; ranks may outnumber cores (idle ranks then yield:
    # Open MPI's own choice for a job with more ranks than cores).
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    env.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
    env.setdefault("PLEXUS_PARAMS_DIR", "none")
    return env


def network_available():
    """None when bench/shaped_network.sh can run here, else why not (its own checks)."""
    if os.geteuid() != 0:
        return "not root"
    for t in ("ip", "tc"):
        if shutil.which(t) is None:
            return "no '%s' (iproute2) on the PATH" % t
    return None


RATE = re.compile(r"^[0-9]+(bit|kbit|mbit|gbit|bps|kbps|mbps|gbps)$")


def run_logged(cmd, env, what):
    log("%s: %s" % (what, " ".join(cmd)))
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        if p.returncode == 77:
            raise RuntimeError("%s: the emulated network could not be set up here (bench/shaped_network.sh "
                               "exit 77, its reason above); --no-network runs without it" % what)
        raise RuntimeError("%s failed with exit code %d" % (what, p.returncode))
    return p


def run(args):
    classes = args.classes.split(",")
    for c in classes:
        if c not in CLASSES:
            raise UsageError("unknown class '%s' (known: %s)" % (c, ", ".join(CLASSES)))
    rates = [r for r in args.rates.split(",") if r]
    for r in rates:
        if not RATE.match(r):
            raise UsageError("--rates: '%s' is not a rate as tc writes it (e.g. 1gbit, 200mbit)" % r)
    plexus = tool(args.build, "plexus")
    g4bench = tool(args.build, "plexus-g4-bench")
    mpiexec(args.ranks)  # the launcher exists
    out = os.path.abspath(args.out)
    manifest_path = os.path.join(out, "manifest.json")
    if os.path.exists(manifest_path):
        if not args.force:
            raise UsageError("%s already holds a manifest.json (give --force to replace its runs)" % out)
        os.remove(manifest_path)  # a run that fails now leaves no manifest naming mixed files
    os.makedirs(out, exist_ok=True)
    strategies = [s for s in STRATEGIES if s != "dbcsr" or have_strategy(plexus, "dbcsr")]
    if "dbcsr" not in strategies:
        log("the dbcsr strategy is not built here: PASC'17 runs without it")
    networks = ["shm"]
    why_not = "--no-network" if args.no_network else network_available()
    if why_not is None:
        networks = ["none"]
        for r in rates:
            networks += [r] + (["%s-per-node" % r] if args.nodes > 0 else [])
    else:
        log("the emulated network cannot run here (%s): shared memory only" % why_not)
    env = mpi_env()
    manifest = {
        "generated_by": "bench/paper_figures.py run",
        "command_line": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node(), "cores": os.cpu_count(), "ranks": args.ranks, "quick": args.quick,
        "network_note": None if why_not is None else why_not,
        "pasc17": [], "dca_ring": None,
    }
    for net in networks:
        for c in classes:
            sets = dict(COMMON)
            sets.update(CLASSES[c]["sets"])
            if args.quick:
                sets["Problem/Blocks"] = QUICK_BLOCKS[c]
                sets["Timing/Rounds"] = 1
            name = "pasc17-%s-%s.json" % (c, net)
            cmd = mpiexec(args.ranks) + [plexus, "compare", "--strategies", ",".join(strategies), "--json",
                                         os.path.join(out, name), "--no-progress"]
            for k, v in sets.items():
                cmd += ["--set", "%s=%s" % (k, v)]
            entry = {"class": c, "title": CLASSES[c]["title"], "network": net, "file": name}
            if net != "shm":
                stats = "pasc17-%s-%s-link.json" % (c, net)
                harness = [os.path.join(ROOT, "bench", "shaped_network.sh"), "--rate", net.split("-")[0], "--quiet",
                           "--stats", os.path.join(out, stats)]
                if net.endswith("-per-node"):
                    harness += ["--nodes", str(args.nodes)]
                    entry["nodes"] = args.nodes
                cmd = harness + ["--"] + cmd
                entry["link_file"] = stats
            run_logged(cmd, env, "PASC'17 %s over %s" % (c, net))
            manifest["pasc17"].append(entry)
    subrings = []
    s = 1
    while s <= args.ranks:
        if args.ranks % s == 0:
            subrings.append(s)
        s *= 2
    g4 = "dca-ring.json"
    cmd = mpiexec(args.ranks) + [g4bench, "--configs", "replicated,ring", "--subrings",
                                 ",".join(str(x) for x in subrings), "--json", os.path.join(out, g4)]
    cmd += ["--quick"] if args.quick else ["--lx", "4", "--ly", "4", "--nw", "8", "--measurements", "8"]
    run_logged(cmd, env, "DCA++ ring")
    manifest["dca_ring"] = {"file": g4, "subrings": subrings}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    log("wrote %s" % os.path.join(out, "manifest.json"))
    if args.check:
        args.input = out
        return check(args)
    return 0


def load(path):
    with open(path) as f:
        return json.load(f)


def rows_by_strategy(doc):
    """compare's rows keyed by their strategy spec as given ('cannon', 'rma25d:Layers=4', ...)."""
    return {r["strategy"]: r for r in doc["rows"]}


def check(args):
    d = os.path.abspath(args.input)
    m = load(os.path.join(d, "manifest.json"))
    problems = []
    if not m.get("pasc17"):
        problems.append("no PASC'17 runs")
    for e in m.get("pasc17", []):
        doc = load(os.path.join(d, e["file"]))
        rows = doc["rows"]
        if len(rows) < 3:
            problems.append("%s: %d rows, expected cannon and two rma25d" % (e["file"], len(rows)))
        for r in rows:
            if not r["seconds_median"] > 0:
                problems.append("%s: %s has no time" % (e["file"], r["strategy"]))
            if r["ranks"] != m["ranks"]:
                problems.append("%s: ran on %s ranks, not %s" % (e["file"], r["ranks"], m["ranks"]))
            if r["strategy"] != "dbcsr" and not r["volume_per_rank_max"] > 0:
                problems.append("%s: %s moved no data" % (e["file"], r["strategy"]))
            if not r["relative_difference"] <= doc["tolerance"]:
                problems.append("%s: %s differs from the first result" % (e["file"], r["strategy"]))
        if "link_file" in e and not load(os.path.join(d, e["link_file"])).get("bytes", 0) > 0:
            problems.append("%s: the shaped link carried nothing" % e["link_file"])
    g4 = load(os.path.join(d, m["dca_ring"]["file"]))
    sizes = sorted(r["sub_ring_size"] for r in g4["rows"] if r["mode"] == "distributed")
    if sizes != sorted(m["dca_ring"]["subrings"]):
        problems.append("DCA++ ring: sub-ring sizes %s, expected %s" % (sizes, m["dca_ring"]["subrings"]))
    norms = [r["g4_l2_norm"] for r in g4["rows"]]
    if not norms or max(norms) - min(norms) > 1e-10 * max(abs(x) for x in norms):
        problems.append("DCA++ ring: the configurations disagree on |G4| (%s)" % sorted(norms))
    for p in problems:
        print("paper_figures check: " + p, file=sys.stderr)
    if not problems:
        print("paper_figures check: %s is complete (%d PASC'17 runs, %d DCA++ configurations)"
              % (d, len(m["pasc17"]), len(g4["rows"])))
    return 1 if problems else 0


# The paper's Table 2: total volume L=4 over L=1 measured for CP2K's H2O-DFT-LS and S-E at 400,
# 1296 and 2704 nodes (square grids of side V = 20, 36, 52), as quoted in docs/rma25d.md.
PAPER_TABLE2 = {"V": [20, 36, 52], "H2O-DFT-LS": [0.717, 0.610, 0.574], "S-E": [0.643, 0.567, 0.544]}


def eq7(row1, row4, side):
    """The paper's Equation 7 on a square grid of side V, with this run's panel sizes: per process
    V/sqrt(L) (S_A + S_B) + (L-1) S_C, so L=4 over L=1 is 1/2 + 3 S_C / (V (S_A + S_B)).
    (S_A + S_B) comes from L=1's predicted A and B bytes (V of each), (L-1) S_C from L=4's predicted
    C bytes. Returns (ratio, S_C / ((S_A + S_B) / 2))."""
    f1, f4 = row1["strategy_figures"], row4["strategy_figures"]
    ab = (f1.get("predicted_bytes_a", 0) + f1.get("predicted_bytes_b", 0)) / side  # S_A + S_B
    sc = f4.get("predicted_bytes_c", 0) / 3.0
    if ab <= 0:
        return float("nan"), float("nan")
    return 0.5 + 3.0 * sc / (side * ab), sc / (ab / 2.0)


def net_label(n):
    if n == "none":
        return "TCP,\nunshaped"
    if n == "shm":
        return "shared\nmemory"
    if n.endswith("-per-node"):
        return "%s\nper node" % n.split("-")[0]
    return "%s\nshared" % n


def plot(args):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("paper_figures: matplotlib is not installed for %s (Debian: python3-matplotlib; "
              "scripts/install-deps.sh --plots): no plots" % sys.executable, file=sys.stderr)
        return 77
    d = os.path.abspath(args.input)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    m = load(os.path.join(d, "manifest.json"))
    stamp = "%s, %d ranks on %s cores, %s" % (m["host"], m["ranks"], m["cores"], m["date_utc"][:10])
    written = []

    runs = {}  # (class, network) -> rows by strategy
    for e in m["pasc17"]:
        runs[(e["class"], e["network"])] = rows_by_strategy(load(os.path.join(d, e["file"])))
    if not runs:
        raise RuntimeError("%s/manifest.json lists no PASC'17 runs" % d)
    classes = [c for c in CLASSES if any(k[0] == c for k in runs)]
    networks = []
    for e in m["pasc17"]:
        if e["network"] not in networks:
            networks.append(e["network"])
    strategies = [s for s in STRATEGIES if any(s in r for r in runs.values())]

    def per_class_bars(series, value, ylabel, title, name, height, hline=False):
        """One panel per class, a group of bars per network, one bar per strategy of `series`
        (coloured by its place among all strategies): value(class, network, strategy) or nan."""
        fig, axes = plt.subplots(1, len(classes), figsize=(5.0 * len(classes), height), squeeze=False)
        width = 0.8 / len(series)
        for ax, c in zip(axes[0], classes):
            for i, st in enumerate(series):
                ys = [value(c, n, st) if st in runs.get((c, n), {}) else float("nan") for n in networks]
                ax.bar([x + i * width for x in range(len(networks))], ys, width, label=st,
                       color="C%d" % strategies.index(st))
            if hline:
                ax.axhline(1.0, color="grey", lw=0.8)
            ax.set_xticks([x + 0.4 - width / 2 for x in range(len(networks))])
            ax.set_xticklabels([net_label(n) for n in networks], fontsize=7)
            ax.set_title(CLASSES[c]["title"], fontsize=9)
            ax.set_ylabel(ylabel)
        axes[0][0].legend(fontsize=7)
        fig.suptitle("%s (%s)" % (title, stamp), fontsize=9)
        fig.tight_layout()
        written.append(save(fig, out, name))

    # Figure 1 of PASC'17: time per multiply, every strategy, class and network.
    per_class_bars(strategies, lambda c, n, st: runs[(c, n)][st]["seconds_median"], "seconds per multiply (median)",
                   "PASC'17 Figure 1, here: time per multiply", "pasc17-time.png", 3.8)
    # Figure 1's speedups: each strategy's time over cannon's, per class and network (> 1: faster).
    others = [x for x in strategies if x != "cannon"]
    if "cannon" in strategies and others:
        def speedup(c, n, st):
            t = runs[(c, n)][st]["seconds_median"]
            return runs[(c, n)]["cannon"]["seconds_median"] / t if t > 0 else float("nan")
        per_class_bars(others, speedup, "speed-up over cannon (time ratio)",
                       "PASC'17 Figure 1, here: speed-up over cannon", "pasc17-speedup.png", 3.6, hline=True)

    # PASC'17 Table 2 and Equation 7: volume L=4 over L=1, measured against the model, here and
    # (right) across grid sides, with the paper's measurements at 400 to 2704 nodes.
    side = int(round(math.sqrt(m["ranks"])))
    net0 = networks[0]
    measured, model, c_over_ab = [], [], []
    for c in classes:
        r = runs[(c, net0)]
        r1, r4 = r.get("rma25d:Layers=1"), r.get("rma25d:Layers=4")
        if r1 and r4 and r1["volume_per_rank_max"] > 0:
            measured.append(r4["volume_per_rank_max"] / r1["volume_per_rank_max"])
            ratio, cab = eq7(r1, r4, side)
        else:
            measured.append(float("nan"))
            ratio, cab = float("nan"), float("nan")
        model.append(ratio)
        c_over_ab.append(cab)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.8))
    xs = range(len(classes))
    a1.bar([x - 0.2 for x in xs], measured, 0.4, label="measured (counted bytes, max over ranks)")
    a1.bar([x + 0.2 for x in xs], model, 0.4, label="Equation 7 (partial C panels = S_C)")
    a1.axhline(1.0, color="grey", lw=0.8)
    a1.set_xticks(list(xs))
    a1.set_xticklabels([CLASSES[c]["title"].split(" (")[0] for c in classes], fontsize=8)
    a1.set_ylabel("volume per rank, L=4 / L=1")
    a1.set_title("here: %dx%d grid (V = %d)" % (side, side, side), fontsize=8)
    a1.legend(fontsize=7)
    vs = [v for v in range(2, 61)]
    for c, cab in zip(classes, c_over_ab):
        if cab == cab:
            a2.plot(vs, [0.5 + 1.5 * cab / v for v in vs], lw=1, label="Eq. 7, S_C/S_AB = %.2f (%s here)" % (cab, c))
    for c, mv in zip(classes, measured):
        a2.plot([side], [mv], "x", color="k")
    a2.plot(PAPER_TABLE2["V"], PAPER_TABLE2["H2O-DFT-LS"], "s", label="paper, H2O-DFT-LS (Table 2)")
    a2.plot(PAPER_TABLE2["V"], PAPER_TABLE2["S-E"], "^", label="paper, S-E (Table 2)")
    a2.plot(PAPER_TABLE2["V"], [0.5 + 1.5 * x / v for x, v in zip([2.7, 2.1, 1.0], PAPER_TABLE2["V"])], "--",
            color="grey", lw=0.8, label="Eq. 7 at the paper's S_C/S_AB (2.7, 2.1, 1.0)")
    a2.axhline(1.0, color="grey", lw=0.8)
    a2.set_xlabel("grid side V (x: measured here)")
    a2.set_ylabel("volume, L=4 / L=1")
    a2.set_ylim(0.4, max(2.0, max((x for x in measured if x == x), default=1.0) * 1.1))
    a2.legend(fontsize=6)
    fig.suptitle("PASC'17 Equation 7 and Table 2, here (%s)" % stamp, fontsize=9)
    fig.tight_layout()
    written.append(save(fig, out, "pasc17-volume-ratio.png"))

    # Memory (PASC'17 Equation 6's trade): peak memory per rank.
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    width = 0.8 / len(strategies)
    xs = range(len(classes))
    for i, s in enumerate(strategies):
        ys = [runs[(c, net0)][s]["peak_memory_bytes_max"] / 2**20 if s in runs[(c, net0)] else float("nan")
              for c in classes]
        ax.bar([x + i * width for x in xs], ys, width, label=s)
    ax.set_xticks([x + 0.4 - width / 2 for x in xs])
    ax.set_xticklabels([CLASSES[c]["title"] for c in classes], fontsize=7)
    ax.set_ylabel("peak tracked memory per rank (MiB)")
    ax.legend(fontsize=7)
    ax.set_title("PASC'17: memory traded for volume (%s)" % stamp, fontsize=8)
    fig.tight_layout()
    written.append(save(fig, out, "pasc17-memory.png"))

    # PASC'21 (DCA++): time per measurement and G4 memory against the sub-ring size S.
    g4 = load(os.path.join(d, m["dca_ring"]["file"]))
    ring = sorted((r for r in g4["rows"] if r["mode"] == "distributed" and r["label"].startswith("distributed, ring")),
                  key=lambda r: r["sub_ring_size"])
    rep = [r for r in g4["rows"] if r["mode"] == "replicated"]
    s = [r["sub_ring_size"] for r in ring]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.6))
    t = [r["seconds_per_measurement"] * 1e3 for r in ring]
    a1.plot(s, t, "o-", label="distributed, ring")
    if len(s) > 1:
        slope = (t[-1] - t[0]) / (s[-1] - s[0])
        a1.plot(s, [t[0] + slope * (x - s[0]) for x in s], "--", color="grey", label="linear in S")
    if rep:
        a1.axhline(rep[0]["seconds_per_measurement"] * 1e3, color="k", lw=0.8, label="replicated")
    a1.set_xscale("log", base=2)
    a1.set_xlabel("sub-ring size S")
    a1.set_ylabel("ms per measurement")
    a1.legend(fontsize=7)
    mem = [r["storage_bytes_per_rank"] / 2**20 for r in ring]
    a2.plot(s, mem, "o-", label="G4 per rank, distributed")
    a2.plot(s, [mem[0] * s[0] / x for x in s], "--", color="grey", label="1/S")
    if rep:
        a2.axhline(rep[0]["storage_bytes_per_rank"] / 2**20, color="k", lw=0.8, label="replicated")
    a2.set_xscale("log", base=2)
    a2.set_yscale("log", base=2)
    a2.set_xlabel("sub-ring size S")
    a2.set_ylabel("MiB per rank")
    a2.legend(fontsize=7)
    fig.suptitle("PASC'21 (DCA++ ring), here: N = %d, %s" % (g4["n"], stamp), fontsize=9)
    fig.tight_layout()
    written.append(save(fig, out, "dca-ring.png"))
    # Huang & Chow (IPDPS'19) Figure 5: the nboverlap benchmark's committed run, when it is there.
    nb = args.nboverlap
    if nb and os.path.exists(nb):
        written.append(plot_nboverlap(plt, load(nb), out))
    elif nb:
        log("no %s: the nboverlap figure is not drawn" % nb)
    for w in written:
        if not os.path.getsize(w) > 0:
            raise RuntimeError("%s is empty" % w)
        print("paper_figures: wrote %s" % w)
    return 0


def plot_nboverlap(plt, doc, out):
    """Bandwidth against message size for each case of plexus-nboverlap-bench (Figure 5)."""
    ops = sorted({r["operation"] for r in doc["rows"]})
    fig, axes = plt.subplots(1, len(ops), figsize=(4.8 * len(ops), 3.6), squeeze=False)
    for ax, op in zip(axes[0], ops):
        rows = [r for r in doc["rows"] if r["operation"] == op]
        for case in sorted({r["case"] for r in rows}):
            pts = sorted((r["bytes"], r["bandwidth_bytes_per_second_at_median"] / 1e6) for r in rows
                         if r["case"] == case)
            ax.plot([x for x, _ in pts], [y for _, y in pts], "o-", ms=3, label=case)
        model = sorted({(r["bytes"], r["model_bandwidth_bytes_per_second"] / 1e6) for r in rows})
        ax.plot([x for x, _ in model], [y for _, y in model], "--", color="grey", label="alpha-beta model")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bytes per collective")
        ax.set_ylabel("MB/s at the median time")
        ax.set_title(op, fontsize=9)
        ax.legend(fontsize=7)
    mach = doc.get("machine", {})
    fig.suptitle("Huang & Chow Figure 5, here: %d ranks on %s cores, %s" % (
        mach.get("ranks", 0), mach.get("online_cpus", "?"), str(mach.get("date_utc", ""))[:10]), fontsize=9)
    fig.tight_layout()
    return save(fig, out, "nboverlap-figure5.png")


def save(fig, out, name):
    import matplotlib.pyplot as plt
    path = os.path.join(out, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See docs/results.md for the figures and how they were made.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="measure; writes JSON and manifest.json into --out")
    r.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "papers"),
                   help="where the JSON and manifest.json go (default bench/results/papers)")
    r.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build directory (default build/)")
    r.add_argument("--ranks", type=int, default=16, help="MPI ranks (default 16, a 4x4 grid)")
    r.add_argument("--rates", default="1gbit,200mbit",
                   help="shaped rates for the emulated network, comma-separated (default 1gbit,200mbit); "
                        "TCP unshaped ('none') always runs with them")
    r.add_argument("--no-network", action="store_true", help="shared memory only: no emulated network runs")
    r.add_argument("--nodes", type=int, default=4,
                   help="also run each rate per node, on this many simulated nodes with a link each "
                        "(shaped_network.sh --nodes; default 4; 0: shared link only)")
    r.add_argument("--classes", default="h2o,se,dense", help="PASC'17 classes, of h2o, se, dense (default all)")
    r.add_argument("--quick", action="store_true", help="tiny sizes, one round: checks the path, measures nothing")
    r.add_argument("--force", action="store_true", help="replace the runs of an earlier manifest in --out")
    r.add_argument("--mpiexec", default="mpiexec", help="the MPI launcher (default: mpiexec on PATH)")
    r.add_argument("--check", action="store_true", help="check the directory afterwards (as the check command)")
    p = sub.add_parser("plot", help="draw the PNGs from a directory written by run")
    p.add_argument("--in", dest="input", default=os.path.join(ROOT, "bench", "results", "papers"),
                   help="a directory written by run (default bench/results/papers)")
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "results", "papers"),
                   help="where the PNGs go (default docs/results/papers)")
    p.add_argument("--nboverlap", default=os.path.join(ROOT, "bench", "results", "nboverlap", "nboverlap-8ranks-2x4.json"),
                   help="plexus-nboverlap-bench JSON for Huang & Chow's Figure 5 ('' to leave it out)")
    c = sub.add_parser("check", help="check a directory written by run")
    c.add_argument("--in", dest="input", required=True)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "run":
            if args.ranks < 1:
                raise UsageError("--ranks must be at least 1")
            if not args.no_network and not 0 <= args.nodes <= min(args.ranks, 64):
                raise UsageError("--nodes must be in [0, min(ranks, 64)], not %d" % args.nodes)
            MPIEXEC[0] = args.mpiexec
            return run(args)
        if args.cmd == "plot":
            return plot(args)
        return check(args)
    except UsageError as e:
        print("paper_figures: error: %s" % e, file=sys.stderr)
        return 2
    except (RuntimeError, OSError, KeyError, ValueError) as e:
        print("paper_figures: error: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
