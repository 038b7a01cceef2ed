#!/usr/bin/env python3
"""Plots of the cg_bands benchmarks (issue 12) from their JSON files, as PNGs.

  /usr/bin/python3 bench/cg_bands_plot.py [--results bench/results/cg_bands] [--out docs/results/cg_bands]

* scaling-*.json (bench/cg_bands_scaling.sh) -> cg_bands-scaling-<name>.png: time per sweep against
  the rank count, stacked bars of local compute, allreduce and all-to-all (the slowest rank's mean
  per sweep), the LogGP prediction of the communication (allreduce + all-to-all) as markers, and the
  model sweep (compute on 1 rank / P + predicted communication) as a dashed line; one panel per
  BatchReductions setting.
* fft-*.json (plexus-fft-bench) -> cg_bands-fft-ratio.png: ours / FFTW MPI (medians) against the
  rank count, one line per box and planning; and the two medians themselves.

Needs matplotlib (Debian: python3-matplotlib; scripts/install-deps.sh --plots installs it).
"""
import argparse
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def scaling_plot(path, out_dir):
    doc = json.load(open(path))
    runs = doc["runs"]
    settings = sorted({r["batch_reductions"] for r in runs})
    fig, axes = plt.subplots(1, len(settings), figsize=(6.2 * len(settings), 4.6), squeeze=False)
    first = runs[0]
    for ax, batch in zip(axes[0], settings):
        rows = sorted((r for r in runs if r["batch_reductions"] == batch), key=lambda r: r["ranks"])
        ranks = [r["ranks"] for r in rows]
        x = list(range(len(rows)))
        comp = [r["compute_seconds_per_sweep"] for r in rows]
        ared = [r["allreduce_seconds_per_sweep"] for r in rows]
        a2a = [r["alltoall_seconds_per_sweep"] for r in rows]
        ax.bar(x, comp, 0.6, label="local compute", color="#4c72b0")
        ax.bar(x, ared, 0.6, bottom=comp, label="allreduce", color="#dd8452")
        ax.bar(x, a2a, 0.6, bottom=[c + a for c, a in zip(comp, ared)], label="all-to-all (FFT)", color="#55a868")
        pred = [(r.get("predicted_allreduce_seconds_per_sweep") or 0) + (r.get("predicted_alltoall_seconds_per_sweep")
                                                                           or 0) for r in rows]
        for xi, c, a, b in zip(x, comp, ared, a2a):
            ax.annotate("%.3g s" % (c + a + b), (xi, c + a + b), ha="center", va="bottom", fontsize=8)
        ax.plot(x, pred, "kD", markersize=7, label="LogGP: allreduce + all-to-all")
        one = [r for r in rows if r["ranks"] == 1]
        if one:
            c1 = one[0]["compute_seconds_per_sweep"]
            ax.plot(x, [c1 / p + q for p, q in zip(ranks, pred)], "k--", linewidth=1,
                    label="model: compute(P=1)/P + LogGP")
        ax.set_xticks(x)
        ax.set_xticklabels([str(p) for p in ranks])
        ax.set_xlabel("ranks P (2 cores: P > 2 oversubscribed)")
        calls = rows[0].get("cg_allreduces_per_sweep") or 0
        other = rows[0].get("other_allreduces_per_sweep") or 0
        ax.set_title("BatchReductions=%s (%d + %d allreduces a sweep)" % (str(batch).lower(), calls, other))
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("seconds per sweep (slowest rank)")
    axes[0][-1].legend(loc="upper left", fontsize=8)
    box = first.get("fft_box") or []
    fig.suptitle("cg_bands: Si %d atoms, %d plane waves, %d bands, FFT box %s; %s" % (
        first["atoms"], first["npw"], first["bands"], "x".join(str(int(b)) for b in box),
        doc.get("date_utc", "")[:10]), fontsize=10)
    fig.tight_layout()
    name = os.path.splitext(os.path.basename(path))[0]
    target = os.path.join(out_dir, "cg_bands-%s.png" % name)
    fig.savefig(target, dpi=110)
    plt.close(fig)
    return target


def fft_plot(paths, out_dir):
    series = {}
    for path in paths:
        d = json.load(open(path))
        par = d["parameters"]
        key = (tuple(par["supercell"]), par["ecut"], "x".join(str(b) for b in par["box"]), par["npw"],
               par["sticks"], par["planning"], par.get("fftw_layout", "natural"))
        series.setdefault(key, []).append(
            (par["ranks"], d["ratio_median"], d["ours"]["seconds"]["median"], d["fftw_mpi"]["seconds"]["median"]))
    if not series:
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    for key, pts in sorted(series.items()):
        pts.sort()
        sc, ecut, box, npw, sticks, planning, layout = key
        label = "Si %s, Ecut %g: box %s, %d PW, %d sticks; %s%s" % (
            "x".join(str(s) for s in sc), ecut, box, npw, sticks, planning.replace("FFTW_", ""),
            "" if layout == "natural" else ", FFTW transposed")
        p = [q[0] for q in pts]
        line, = ax1.plot(p, [q[1] for q in pts], "o-", label=label)
        ax2.plot(p, [q[2] * 1e3 for q in pts], "o-", color=line.get_color(), label="ours, %s, %s" % (box, planning.replace("FFTW_", "")))
        ax2.plot(p, [q[3] * 1e3 for q in pts], "s--", color=line.get_color(), label="FFTW MPI, %s, %s" % (box, planning.replace("FFTW_", "")))
    ax1.axhline(1.0, color="k", linewidth=0.8)
    all_p = sorted({q[0] for pts in series.values() for q in pts})
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(all_p)
        ax.set_xticklabels([str(p) for p in all_p])
        ax.minorticks_off()
        ax.set_xlabel("ranks P (2 cores: P > 2 oversubscribed)")
        ax.grid(alpha=0.3)
    ax1.set_ylabel("time ours / FFTW MPI (medians)")
    ax1.set_title("plane FFT vs fftw_mpi_plan_dft_3d: G -> r -> G (below 1: ours faster)")
    ax1.legend(fontsize=7)
    ax2.set_ylabel("ms per G -> r -> G (median, slowest rank)")
    ax2.set_yscale("log")
    ax2.set_title("the two medians")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    target = os.path.join(out_dir, "cg_bands-fft-ratio.png")
    fig.savefig(target, dpi=110)
    plt.close(fig)
    return target


def tables(results):
    """Markdown tables of the figures (what docs/cg_bands-bench.md shows)."""
    lines = []
    for path in sorted(glob.glob(os.path.join(results, "scaling-*.json"))):
        doc = json.load(open(path))
        lines.append("%s (%s, %s):\n" % (os.path.basename(path), doc.get("date_utc", ""), doc.get("command", "")))
        lines.append("| BatchReductions | P | sweep s | compute | allreduce | all-to-all | predicted allreduce | "
                     "predicted all-to-all | sweeps 2+ (rank 0) | saturation P | runnable before |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in sorted(doc["runs"], key=lambda r: (r["batch_reductions"], r["ranks"])):
            later = r.get("later_sweeps", {}).get("seconds_per_sweep")
            lines.append("| %s | %d | %.4g | %.4g | %.4g | %.4g | %.4g | %.4g | %s | %s | %.1f |" % (
                str(r["batch_reductions"]).lower(), r["ranks"], r["seconds_per_sweep"],
                r["compute_seconds_per_sweep"], r["allreduce_seconds_per_sweep"], r["alltoall_seconds_per_sweep"],
                r.get("predicted_allreduce_seconds_per_sweep") or 0, r.get("predicted_alltoall_seconds_per_sweep") or 0,
                "%.4g" % later if later is not None else "-",
                "%d" % r["saturation_ranks"] if r.get("saturation_ranks") is not None else "-",
                r.get("runnable_before", -1)))
        lines.append("")
    rows = []
    for path in sorted(glob.glob(os.path.join(results, "fft-*.json"))):
        d = json.load(open(path))
        par = d["parameters"]
        rows.append((tuple(par["supercell"]), par["ranks"], par, d))
    if rows:
        lines.append("| Si | box | npw | sticks / Nx Ny | P | planning | FFTW layout | ours ms (median) | ours all-to-all ms | "
                     "FFTW MPI ms (median) | ratio (medians) | ratio (minima) | load before |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for _, _, par, d in sorted(rows, key=lambda t: (t[0], t[2].get("fftw_layout", ""), t[1])):
            lines.append("| %s | %s | %d | %d / %d | %d | %s | %s | %.4g | %.4g | %.4g | %.3f | %.3f | %.2f |" % (
                "x".join(str(c) for c in par["supercell"]), "x".join(str(b) for b in par["box"]), par["npw"],
                par["sticks"], par["z_columns_fftw"], par["ranks"], par["planning"].replace("FFTW_", "").lower(),
                par.get("fftw_layout", "natural").split(" ")[0],
                d["ours"]["seconds"]["median"] * 1e3, d["ours"]["alltoall_seconds"]["median"] * 1e3,
                d["fftw_mpi"]["seconds"]["median"] * 1e3, d["ratio_median"], d["ratio_min"],
                d["load_average_1min"]["before"]))
    return "\n".join(lines)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default=os.path.join(root, "bench", "results", "cg_bands"))
    ap.add_argument("--out", default=os.path.join(root, "docs", "results", "cg_bands"))
    ap.add_argument("--tables", action="store_true", help="print markdown tables of the figures instead")
    a = ap.parse_args()
    if a.tables:
        print(tables(a.results))
        return 0
    os.makedirs(a.out, exist_ok=True)
    written = []
    for path in sorted(glob.glob(os.path.join(a.results, "scaling-*.json"))):
        written.append(scaling_plot(path, a.out))
    f = fft_plot(sorted(glob.glob(os.path.join(a.results, "fft-*.json"))), a.out)
    if f:
        written.append(f)
    if not written:
        print("cg_bands_plot: no scaling-*.json or fft-*.json in", a.results, file=sys.stderr)
        return 1
    for w in written:
        print("wrote", w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
