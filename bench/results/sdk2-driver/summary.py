#!/usr/bin/env python3
"""Medians of the 1-thread rates per class over the before-run*.json and after-run*.json here."""
import glob
import json
import os
import statistics

here = os.path.dirname(os.path.abspath(__file__))
rates = {}
for path in sorted(glob.glob(os.path.join(here, "*-run*.json"))):
    which = os.path.basename(path).split("-")[0]
    for c in json.load(open(path))["classes"]:
        rates.setdefault((c["name"], which), []).append(c["threads_1"]["gflops"])
print("| class | before | after | after / before |")
print("|---|---|---|---|")
for name in ("h2o", "se", "dense"):
    b = statistics.median(rates[(name, "before")])
    a = statistics.median(rates[(name, "after")])
    print(f"| {name} | {b:.2f} | {a:.2f} | {a / b:.2f} |")
