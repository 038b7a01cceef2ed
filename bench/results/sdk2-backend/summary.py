#!/usr/bin/env python3
"""Medians of the 1-thread rates per class: before-run*/after-run* (default plexus-bench) and
repeat5-before-run*/repeat5-after-run* (--classes dense,h2o --repeat 5), with the pairwise ratios."""
import glob
import json
import os
import statistics

here = os.path.dirname(os.path.abspath(__file__))


def table(prefix):
    rates = {}
    for which in ("before", "after"):
        for path in sorted(glob.glob(os.path.join(here, f"{prefix}{which}-run*.json"))):
            for c in json.load(open(path))["classes"]:
                rates.setdefault((c["name"], which), []).append(c["threads_1"]["gflops"])
    print(f"| class ({prefix or 'default'}) | before (median) | after (median) | after / before | pairwise ratios |")
    print("|---|---|---|---|---|")
    for name in ("h2o", "se", "dense"):
        if (name, "before") not in rates:
            continue
        b, a = rates[(name, "before")], rates[(name, "after")]
        pairs = ", ".join(f"{y / x:.2f}" for x, y in zip(b, a))
        print(f"| {name} | {statistics.median(b):.2f} | {statistics.median(a):.2f} | "
              f"{statistics.median(a) / statistics.median(b):.2f} | {pairs} |")


table("")
print()
table("repeat5-")
