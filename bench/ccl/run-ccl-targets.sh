#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-ccl-targets.sh - the private-buffer targets of npccl on one host, in one command:
# AllReduce 64 KiB-64 MiB against the better of Open MPI and MPICH and against single-core
# memcpy; AllGather, Broadcast and ReduceScatter at 1 MiB and 16 MiB against the better MPI;
# 8-byte AllReduce p50 against Open MPI in 5 alternating runs. 2 ranks bound to the 2 cores,
# the three libraries interleaved collective by collective, ROUNDS rounds (default 3), every
# row verified by the harness (bench/ccl/perf.c). Root not needed; run after `make`.
#
#   bench/ccl/run-ccl-targets.sh [ROUNDS]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
BIN=$BUILD/bin BENCH=$BUILD/bench
mkdir -p "$BENCH"
OUT=$BUILD/bench/ccl-targets
ROUNDS=${1:-3}
mkdir -p "$OUT"
rm -f "$OUT"/*.txt
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
for mpi in openmpi mpich; do
	mpicc.$mpi -O2 -o "$BENCH/mpi-perf-$mpi" "$ROOT/bench/ccl/perf.c" "$ROOT/bench/ccl/backend_mpi.c" -lm ||
		{ echo "cannot build mpi-perf-$mpi" >&2; exit 1; }
done
cc -O2 -o "$BENCH/memcpy-bw" "$ROOT/bench/ccl/memcpy_bw.c"
OMPI="mpirun.openmpi --allow-run-as-root -np 2 --bind-to core --map-by core"
MPICH="mpirun.mpich -np 2 -bind-to core"
settle() {
	i=0
	while pgrep -f "mpi-perf-(openmpi|mpich)" >/dev/null && [ $i -lt 50 ]; do
		i=$((i + 1)); sleep 0.2
	done
	sleep 0.5
}
echo "# run-ccl-targets: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -r)"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
lscpu | grep -E "Model name|L1d|L2|L3|Flags" | sed 's/Flags:.*\(avx512f\).*/Flags: ... avx512f .../; s/Flags:.*\(avx2\).*/Flags: ... avx2 (no avx512f) .../' | sed 's/^/# /'
for r in $(seq 1 "$ROUNDS"); do
	taskset -c 0 "$BENCH/memcpy-bw" $((64 << 20)) >"$OUT/memcpy.$r.txt"
	for coll in allreduce allgather broadcast reduce_scatter; do
		if [ $coll = allreduce ]; then a="-b 64K -e 64M -f 2"; else a="-b 1M -e 16M -f 16"; fi
		args="-c $coll $a -t 0.3"
		settle
		"$BIN/npccl-perf" -n 2 --bind $args >"$OUT/$coll.npccl.$r.txt" 2>&1
		$OMPI "$BENCH/mpi-perf-openmpi" $args >"$OUT/$coll.openmpi.$r.txt" 2>&1
		$MPICH "$BENCH/mpi-perf-mpich" $args >"$OUT/$coll.mpich.$r.txt" 2>&1
	done
	echo "# round $r done, load $(cut -d' ' -f1 /proc/loadavg)"
done
for r in 1 2 3 4 5; do
	settle
	"$BIN/npccl-perf" -n 2 --bind -c allreduce -b 8 -e 8 -t 0.5 >"$OUT/lat.npccl.$r.txt" 2>&1
	$OMPI "$BENCH/mpi-perf-openmpi" -c allreduce -b 8 -e 8 -t 0.5 >"$OUT/lat.openmpi.$r.txt" 2>&1
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$OUT" "$ROUNDS" <<'PY'
import glob, os, re, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def table(f):
    rows = {}
    for line in open(f):
        if line.startswith("#") or not line.strip():
            continue
        c = line.split()
        if len(c) >= 16 and c[0].isdigit():
            rows[int(c[0])] = {"busbw": float(c[7]), "wrong": int(c[8]) + int(c[12]), "p50": float(c[14]),
                               "algo": c[16] if len(c) > 16 else ""}
    return rows
def memcpy(f):
    m = re.findall(r"([0-9.]+)\s*GB/s", open(f).read())
    return float(m[-1]) if m else float("nan")
fails, wrong = [], 0
print("\n| collective | size | npccl busbw GB/s | Open MPI | MPICH | npccl / better MPI | target | met |")
print("|---|---:|---:|---:|---:|---:|---|---|")
for coll in ("allreduce", "allgather", "broadcast", "reduce_scatter"):
    per = {r: {lib: table(os.path.join(out, "%s.%s.%d.txt" % (coll, lib, r)))
               for lib in ("npccl", "openmpi", "mpich")} for r in range(1, rounds + 1)}
    sizes = sorted(per[1]["npccl"])
    for s in sizes:
        if coll != "allreduce" and s not in (1 << 20, 16 << 20):
            continue
        vals = {lib: [per[r][lib].get(s, {}).get("busbw", float("nan")) for r in per] for lib in ("npccl", "openmpi", "mpich")}
        wrong += sum(per[r][lib].get(s, {}).get("wrong", 0) for r in per for lib in per[r])
        ratios = [n / max(o, m) for n, o, m in zip(vals["npccl"], vals["openmpi"], vals["mpich"])]
        need = 1.5 if coll == "allreduce" else 1.2
        ok = min(ratios) >= need
        rng = lambda v: "%.2f-%.2f" % (min(v), max(v)) if len(v) > 1 else "%.2f" % v[0]
        print("| %s | %d | %s | %s | %s | %sx | >= %.1fx | %s |" % (coll, s, rng(vals["npccl"]), rng(vals["openmpi"]),
              rng(vals["mpich"]), rng(ratios), need, "yes" if ok else "**no**"))
        if not ok:
            fails.append("%s %d: %.2fx" % (coll, s, min(ratios)))
        if coll == "allreduce" and s >= (16 << 20):
            mc = [memcpy(os.path.join(out, "memcpy.%d.txt" % r)) for r in per]
            frac = [n / m for n, m in zip(vals["npccl"], mc)]
            okm = min(frac) >= 0.6
            print("| allreduce / memcpy | %d | %s | memcpy %s | | %s | >= 0.6 | %s |" % (s, rng(vals["npccl"]), rng(mc), rng(frac), "yes" if okm else "**no**"))
            if not okm:
                fails.append("allreduce %d vs memcpy: %.2f" % (s, min(frac)))
print("\n| 8-byte AllReduce p50 (us) | " + " | ".join("run %d" % r for r in range(1, 6)) + " |")
print("|---|" + "---:|" * 5)
lat = {lib: [table(os.path.join(out, "lat.%s.%d.txt" % (lib, r))).get(8, {}).get("p50", float("nan")) for r in range(1, 6)] for lib in ("npccl", "openmpi")}
for lib in ("npccl", "openmpi"):
    print("| %s | %s |" % (lib, " | ".join("%.2f" % v for v in lat[lib])))
okl = all(n <= o for n, o in zip(lat["npccl"], lat["openmpi"]))
print("\n8-byte p50 no worse than Open MPI in each of 5 runs: %s" % ("met" if okl else "NOT met"))
print("wrong results: %d" % wrong)
print("targets not met: %s" % (", ".join(fails) if fails else "none"))
PY
