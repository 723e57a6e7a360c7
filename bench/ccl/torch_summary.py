# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""torch_summary.py - tables and target verdicts of run-torch-bench.sh: ranges over runs.

    python3 torch_summary.py run-1.json run-2.json ...
"""
import json
import sys

runs = [json.load(open(f)) for f in sys.argv[1:]]
P = runs[0]["ranks"]
F = 2.0 * (P - 1) / P


def rng(vals, fmt="%.2f"):
    lo, hi = min(vals), max(vals)
    return (fmt % lo) if fmt % lo == fmt % hi else "%s-%s" % (fmt % lo, fmt % hi)


def size_name(b):
    return "%d B" % b if b < 1024 else ("%d KiB" % (b >> 10) if b < (1 << 20) else "%d MiB" % (b >> 20))


print("\n## all_reduce float32, 2 processes: %d run(s), ranges over runs" % len(runs))
print("| size | npccl us | gloo us | npccl busbw GB/s | gloo busbw GB/s | busbw npccl/gloo | direct npccl us | torch layer overhead |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
verdict_bw, verdict_lat, verdict_ovh = [], [], []
for i, row in enumerate(runs[0]["all_reduce"]):
    b = row["bytes"]
    rs = [r["all_reduce"][i] for r in runs]
    bw = lambda t: b / t / 1e9 * F
    ratio = [r["gloo"] / r["npccl"] for r in rs]
    ovh = [(r["npccl"] - r["direct"]) / r["direct"] * 100 for r in rs]
    print("| %s | %s | %s | %s | %s | %sx | %s | %s %% |" % (
        size_name(b), rng([r["npccl"] * 1e6 for r in rs], "%.1f"), rng([r["gloo"] * 1e6 for r in rs], "%.1f"),
        rng([bw(r["npccl"]) for r in rs]), rng([bw(r["gloo"]) for r in rs]), rng(ratio, "%.1f"),
        rng([r["direct"] * 1e6 for r in rs], "%.1f"), rng(ovh, "%.0f")))
    if b >= 64 << 10:
        verdict_bw.append((b, min(ratio)))
    if b <= 64:
        verdict_lat.append((b, min(ratio)))
    if b >= 1 << 20:
        verdict_ovh.append((b, max(ovh)))
print("\n## all_gather and broadcast (busbw GB/s; all_gather (p-1)/p, broadcast 1)")
print("| size | all_gather npccl | all_gather gloo | ratio | broadcast npccl | broadcast gloo | ratio |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for i, row in enumerate(runs[0]["extra"]):
    b = row["bytes"]
    rs = [r["extra"][i] for r in runs]
    ag = lambda t: b * P / t / 1e9 * (P - 1) / P
    bc = lambda t: b / t / 1e9
    print("| %s | %s | %s | %sx | %s | %s | %sx |" % (
        size_name(b), rng([ag(r["all_gather_npccl"]) for r in rs]), rng([ag(r["all_gather_gloo"]) for r in rs]),
        rng([r["all_gather_gloo"] / r["all_gather_npccl"] for r in rs], "%.1f"),
        rng([bc(r["broadcast_npccl"]) for r in rs]), rng([bc(r["broadcast_gloo"]) for r in rs]),
        rng([r["broadcast_gloo"] / r["broadcast_npccl"] for r in rs], "%.1f")))
print("\nwrong results: %s" % [r["wrong"] for r in runs])
worst_bw = min(verdict_bw, key=lambda x: x[1])
worst_lat = min(verdict_lat, key=lambda x: x[1])
worst_ovh = max(verdict_ovh, key=lambda x: x[1])
print("target busbw >= 10x gloo from 64 KiB: %s (worst %.1fx at %s)" %
      ("met" if worst_bw[1] >= 10 else "NOT met", worst_bw[1], size_name(worst_bw[0])))
print("target small-message latency <= 1/10 of gloo's (8-64 B): %s (worst %.1fx at %s)" %
      ("met" if worst_lat[1] >= 10 else "NOT met", worst_lat[1], size_name(worst_lat[0])))
print("target torch layer overhead <= 10 %% from 1 MiB: %s (worst %.0f %% at %s)" %
      ("met" if worst_ovh[1] <= 10 else "NOT met", worst_ovh[1], size_name(worst_ovh[0])))
print("describe: %s" % runs[0]["describe"])
