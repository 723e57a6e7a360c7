#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""rdma_summary.py - the ratio tables of bench/ccl/run-rdma-bench.sh.

   rdma_summary.py OUTDIR

Reads OUTDIR/npccl-{rdma,tcp}-COLL.txt (RUNS npccl-perf tables each, the runs
of the two transports interleaved) and OUTDIR/ompi-*.txt; prints per size
the range over runs of t(TCP)/t(RDMA) (paired run by run, out-of-place mean
time), Open MPI's time over npccl-RDMA's median where it ran, and the
registration cache's table from OUTDIR/npccl-{cached,copied,shared,
fresh-cached,fresh-copied}-allreduce.txt."""
import glob
import os
import re
import sys


def tables(path):
    """[{size: out-of-place time us}] per run (a new table starts at its '# npccl-perf' line)."""
    runs = []
    if not os.path.exists(path):
        return runs
    for line in open(path, errors="replace"):
        if line.startswith("# npccl-perf"):
            runs.append({})
            continue
        f = line.split()
        if len(f) >= 7 and f[0].isdigit() and runs:
            try:
                runs[-1][int(f[0])] = float(f[5])
            except ValueError:
                pass
    return [r for r in runs if r]


def rng(v):
    return "%.2f" % v[0] if len(v) == 1 else "%.2f-%.2f" % (min(v), max(v))


def main():
    out = sys.argv[1]
    for coll in ("allreduce", "broadcast"):
        rd, tc = tables("%s/npccl-rdma-%s.txt" % (out, coll)), tables("%s/npccl-tcp-%s.txt" % (out, coll))
        if not rd or not tc:
            print("\n%s: no results (%d RDMA runs, %d TCP runs)" % (coll, len(rd), len(tc)))
            continue
        print("\n### npccl %s, 2 ranks on 2 soft-RoCE hosts: TCP time / RDMA time (%d paired runs)\n"
              % (coll, min(len(rd), len(tc))))
        print("| bytes | RDMA us (range) | TCP us (range) | t(TCP)/t(RDMA) |")
        print("|------:|----------------:|---------------:|---------------:|")
        for s in sorted(rd[0]):
            pairs = [(a[s], b[s]) for a, b in zip(rd, tc) if s in a and s in b]
            if not pairs:
                continue
            print("| %d | %s | %s | %s |" % (s, rng([p[0] for p in pairs]), rng([p[1] for p in pairs]),
                                             rng([p[1] / p[0] for p in pairs])))
    rd = tables("%s/npccl-rdma-allreduce.txt" % out)
    tc = tables("%s/npccl-tcp-allreduce.txt" % out)
    for f in sorted(glob.glob("%s/ompi-*.txt" % out)):
        name = os.path.basename(f)[5:-4]
        if re.search(r"-[0-9]+$", name):
            continue        # one run of ompi-tcp.txt
        om = tables(f)
        if not om or not rd:
            last = [l.strip() for l in open(f, errors="replace") if l.strip()][-3:]
            print("\nOpen MPI (%s): no result; last lines: %s" % (name, " | ".join(last)[:400]))
            continue
        print("\n### Open MPI (%s) allreduce, %d run(s), paired run by run with npccl's\n" % (name, len(om)))
        print("| bytes | Open MPI us (range) | t(Open MPI)/t(npccl RDMA) | t(Open MPI)/t(npccl TCP) |")
        print("|------:|--------------------:|--------------------------:|-------------------------:|")
        for sz in sorted(om[0]):
            o = [r[sz] for r in om if sz in r]
            a = [x[sz] / y[sz] for x, y in zip(om, rd) if sz in x and sz in y]
            b = [x[sz] / y[sz] for x, y in zip(om, tc) if sz in x and sz in y]
            print("| %d | %s | %s | %s |" % (sz, rng(o), rng(a) if a else "-", rng(b) if b else "-"))
    cache_table(out)


def cache_table(out):
    v = {k: tables("%s/npccl-%s-allreduce.txt" % (out, k))
         for k in ("cached", "copied", "shared", "fresh-cached", "fresh-copied")}
    if not v["cached"] or not v["copied"]:
        return
    n = min(len(x) for x in v.values() if x)
    print("\n### npccl allreduce over RDMA, 2 ranks: caller buffers registered and watched vs copied "
          "(%d paired runs)\n" % n)
    print("| bytes | cached us | t(copied)/t(cached) | t(cached)/t(npccl_mem_alloc) "
          "| fresh output each call: t(cached)/t(copied) |")
    print("|------:|----------:|--------------------:|-----------------------------:"
          "|--------------------------------------------:|")

    def ratio(a, b, s):
        r = [x[s] / y[s] for x, y in zip(v[a], v[b]) if s in x and s in y]
        return rng(r) if r else "-"

    for s in sorted(v["cached"][0]):
        c = [r[s] for r in v["cached"] if s in r]
        print("| %d | %s | %s | %s | %s |" % (s, rng(c), ratio("copied", "cached", s),
                                            ratio("cached", "shared", s),
                                            ratio("fresh-cached", "fresh-copied", s)))


if __name__ == "__main__":
    main()
