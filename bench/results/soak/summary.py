#!/usr/bin/env python3
"""Summary of plexus-soak-bench JSON files: per file and strategy, over the ranks, the largest RSS
slope (KB per 1,000 multiplies, after the warm-up), RSS at the warm-up and at the end (largest
rank), the largest heap-free figure at the end (malloc's free bytes: fragmentation) and the
largest tracked peak.

    python3 bench/results/soak/summary.py bench/results/soak/*.json
"""
import json
import sys


def main(paths):
    print(f"{'file':<26} {'strategy':<8} {'slope KB/1000 (rank)':>21} {'RSS warm MB':>11} {'RSS last MB':>11} "
          f"{'RSS max MB':>10} {'heap free MB':>12} {'tracked peak MB':>15}")
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        name = path.rsplit("/", 1)[-1]
        for s in d["strategies"]:
            ranks = s["ranks"]
            worst = max(ranks, key=lambda r: r["rss_slope_kb_per_1000"])
            print(f"{name:<26} {s['strategy']:<8} {worst['rss_slope_kb_per_1000']:>14.0f} ({worst['rank']:>2})   "
                  f"{max(r['rss_at_warmup_kb'] for r in ranks) / 1024:>11.1f} "
                  f"{max(r['rss_last_kb'] for r in ranks) / 1024:>11.1f} "
                  f"{max(r['rss_max_kb'] for r in ranks) / 1024:>10.1f} "
                  f"{max(r['heap_free_kb'][-1] for r in ranks) / 1024:>12.1f} "
                  f"{max(r['tracked_peak_bytes'] for r in ranks) / 2**20:>15.2f}")
        if not d.get("check_ok", False):
            print(f"{name}: check FAILED")


if __name__ == "__main__":
    main(sys.argv[1:])
