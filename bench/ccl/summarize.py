#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
"""summarize.py OUTDIR - read the npccl-perf tables run-ccl-perf.sh wrote and
print, per size, npccl vs the better MPI (out-of-place busbw), the ceilings,
and whether each target of issue 5 is met:
  * busbw >= 1.2x max(Open MPI, MPICH) at every size >= 1 MiB (intra-host)
  * AllReduce busbw >= 10 GB/s from 2 to 256 MiB (intra-host)
  * 8-byte latency <= the better MPI's (intra-host)
  * TCP busbw >= 90% of iperf3 (largest sizes, across namespaces)
"""
import os
import re
import sys


def table(path):
    rows = {}
    if not os.path.exists(path):
        return rows
    for line in open(path, errors="replace"):
        f = line.split()
        if len(f) < 13 or line.startswith("#") or not f[0].isdigit():
            continue
        size = int(f[0])
        rows.setdefault(size, {
            "count": int(f[1]), "t": float(f[5]), "busbw": float(f[7]), "wrong": int(f[8]),
            "t_in": float(f[9]), "busbw_in": float(f[11]), "wrong_in": int(f[12]),
            "algo": f[-1] if not f[-1].replace(".", "").isdigit() else ""})
    return rows


def gbps(path, pat):
    if not os.path.exists(path):
        return None
    for line in open(path, errors="replace"):
        if pat in line:
            m = re.search(r"([\d.]+) Gbits/sec", line)
            if m:
                return float(m.group(1)) / 8
    return None


def main():
    out = sys.argv[1]
    memcpy = None
    if os.path.exists(f"{out}/memcpy.txt"):
        m = re.search(r"([\d.]+) GB/s", open(f"{out}/memcpy.txt").read())
        memcpy = float(m.group(1)) if m else None
    iperf = gbps(f"{out}/iperf3.txt", "receiver")
    opp = [gbps(f"{out}/iperf3-opp-{d}.txt", "receiver") for d in ("1to2", "2to1")]
    opp = min(opp) if None not in opp else None
    verdicts = []
    fmt = lambda v: "-" if v is None else f"{v:.2f}"
    for kind, title in (("intra", "intra-host (shm)"), ("tcp", "two namespaces over veth (TCP)")):
        n, o, m = (table(f"{out}/{kind}-{b}.txt") for b in ("npccl", "openmpi", "mpich"))
        z = table(f"{out}/{kind}-npccl-shared.txt")
        if not n:
            continue
        print(f"\n## {title}: out-of-place busbw GB/s (time us)")
        if z:
            print("npccl: private buffers (as the MPIs); npccl zc: buffers from npccl_mem_alloc "
                  "(zero-copy AllReduce)\n")
            print("| size | npccl | npccl zc | algo | Open MPI | MPICH | npccl / best MPI "
                  "| npccl zc / best MPI |")
            print("|---:|---:|---:|---|---:|---:|---:|---:|")
        else:
            print("| size | npccl | algo | Open MPI | MPICH | npccl / best MPI |")
            print("|---:|---:|---|---:|---:|---:|")
        stats = {"npccl": [1e9, 1e9, False], "npccl zc": [1e9, 1e9, False]}
        for size in sorted(n):
            a = n[size]
            b = o.get(size, {}).get("busbw")
            c = m.get(size, {}).get("busbw")
            best = max([x for x in (b, c) if x is not None], default=None)
            zb = z.get(size, {}).get("busbw")
            ratio = a["busbw"] / best if best else None
            zratio = zb / best if best and zb is not None else None
            rs = lambda r: "-" if r is None else f"{r:.2f}x"
            if z:
                print(f"| {size} | {a['busbw']:.2f} ({a['t']:.1f}) | {fmt(zb)} | {a['algo']} | "
                      f"{fmt(b)} | {fmt(c)} | {rs(ratio)} | {rs(zratio)} |")
            else:
                print(f"| {size} | {a['busbw']:.2f} ({a['t']:.1f}) | {a['algo']} | {fmt(b)} | "
                      f"{fmt(c)} | {rs(ratio)} |")
            if size & (size - 1):
                continue
            for name, bw, r in (("npccl", a["busbw"], ratio), ("npccl zc", zb, zratio)):
                if size >= (1 << 20) and r is not None:
                    stats[name][0] = min(stats[name][0], r)
                    stats[name][2] = True
                if (2 << 20) <= size <= (256 << 20) and bw is not None:
                    stats[name][1] = min(stats[name][1], bw)
        wrong = sum(r["wrong"] + r["wrong_in"] for t in (n, z) for r in t.values())
        print(f"\n#wrong over all npccl rows: {wrong}")
        if kind == "intra":
            for name in ("npccl", "npccl zc"):
                worst, min_bw, have = stats[name]
                if have:
                    verdicts.append((f"{name}: busbw >= 1.2x best MPI at every size >= 1 MiB",
                                     worst >= 1.2, f"worst {worst:.2f}x"))
                if min_bw < 1e9:
                    verdicts.append((f"{name}: AllReduce busbw >= 10 GB/s at 2..256 MiB",
                                     min_bw >= 10, f"lowest {min_bw:.2f} GB/s "
                                     f"(memcpy ceiling {memcpy} GB/s)"))
            small = min(n)
            lat = [x[small]["t"] for x in (o, m) if small in x]
            if lat:
                verdicts.append((f"{small}-byte latency <= best MPI", n[small]["t"] <= min(lat),
                                 f"npccl {n[small]['t']:.2f} us, MPI best {min(lat):.2f} us"))
        else:
            big = [s for s in n if s >= (16 << 20) and s & (s - 1) == 0]
            if iperf and big:
                best = max(n[s]["busbw"] for s in big)
                verdicts.append(("TCP busbw >= 90% of iperf3", best >= 0.9 * iperf,
                                 f"npccl {best:.2f} GB/s vs iperf3 {iperf:.2f} GB/s "
                                 f"({100 * best / iperf:.0f}%)"))
                if opp:
                    print(f"\nTCP, for context: an AllReduce sends and receives at once; iperf3 with two "
                          f"streams in opposite directions at once moved {opp:.2f} GB/s in the slower "
                          f"direction, and npccl's best busbw from 16 MiB ({best:.2f} GB/s, the bytes "
                          f"each rank sends and receives per second) is {100 * best / opp:.0f}% of that.")
    print("\n## targets")
    for name, ok, detail in verdicts:
        print(f"- {'MET' if ok else 'NOT MET'}: {name}: {detail}")


if __name__ == "__main__":
    main()
