#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# copy-bench-guest.sh - inside the test VM with the npushm module loaded
# (run-copy-bench.sh boots it): npccl-perf with 2 local ranks, float32, out of
# place, for AllGather, Broadcast and AllReduce, each path in turn per run:
#   space  single copy through the peers' npushm spaces (NPCCL_ALGO=COLL=cma)
#   cma    single copy by process_vm_readv (the same, NPCCL_DISABLE_SPACE=1)
#   two    two copies through shared memory (NPCCL_DISABLE_CMA=1: the cost
#          model's best algorithm without single copies)
# then the median time per path and size over the runs, the ratios cma/space
# and two/space (above 1: spaces faster) and each path's bus bandwidth
# against single-core memcpy in the same VM.
#   copy-bench-guest.sh OUTDIR [RUNS]
OUT=${1:?usage: copy-bench-guest.sh OUTDIR [RUNS]}
RUNS=${2:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$root/build}
# npccl-perf (installed program) and the memcpy ceiling run-copy-bench.sh built
BIN=$BUILD/bin BENCH=$BUILD/bench
mkdir -p "$OUT"
unset NPCCL_ALGO NPCCL_DISABLE_CMA NPCCL_DISABLE_SPACE OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
echo "# copy-bench: $(nproc) vCPUs (TCG), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), $RUNS runs"
lscpu | grep -i -E "model name|cache" | sed 's/^/# /'
"$BENCH/memcpy-bw" $((16 << 20)) | tee "$OUT/memcpy.txt"
ARGS="-b 64K -e 16M -f 16 -t 0.3 -w 2 -n 2"
for run in $(seq 1 "$RUNS"); do
	for coll in allgather broadcast allreduce; do
		for path in space cma two; do
			case $path in
			space) env="NPCCL_ALGO=$coll=cma" ;;
			cma) env="NPCCL_ALGO=$coll=cma NPCCL_DISABLE_SPACE=1" ;;
			two) env="NPCCL_DISABLE_CMA=1" ;;
			esac
			# shellcheck disable=SC2086
			env $env timeout -k 5 600 "$BIN/npccl-perf" -c "$coll" $ARGS \
				>"$OUT/$coll.$path.$run.txt" 2>&1 ||
				echo "# $coll $path run $run failed: $(tail -1 "$OUT/$coll.$path.$run.txt")"
		done
	done
done
# size, out-of-place time (us), busbw, algorithm: the data rows of npccl-perf
awk -v runs="$RUNS" '
	FNR == 1 {
		n = split(FILENAME, p, "/"); split(p[n], f, ".")
		coll = f[1]; path = f[2]
	}
	/^ *[0-9]/ && NF >= 9 {
		k = coll SUBSEP path SUBSEP $1
		t[k] = t[k] " " $6; bw[k] = bw[k] " " $8; algo[k] = $NF
		sizes[coll SUBSEP $1] = 1
	}
	function median(s,   a, n, i, j, x) {
		n = split(s, a, " ")
		for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		getline line < (outdir "/memcpy.txt")
		split(line, m, ": "); mc = m[2] + 0
		printf "# medians of %d runs; memcpy %.2f GB/s (one core, 16 MiB)\n", runs, mc
		printf "%-10s %9s %11s %11s %11s %8s %8s %13s %13s %13s  %s\n", "coll", "bytes", \
			"space us", "cma us", "two us", "cma/sp", "two/sp", "space bw/mc", "cma bw/mc", \
			"two bw/mc", "two: algo"
		split("allgather broadcast allreduce", cs, " ")
		for (ci = 1; ci <= 3; ci++)
			for (sz = 65536; sz <= 16777216; sz *= 16) {
				c = cs[ci]
				if (!((c SUBSEP sz) in sizes)) continue
				ts = median(t[c, "space", sz]); tc = median(t[c, "cma", sz])
				tt = median(t[c, "two", sz])
				printf "%-10s %9d %11.1f %11.1f %11.1f %8.2f %8.2f %13.2f %13.2f %13.2f  %s\n", c, sz, \
					ts, tc, tt, tc / ts, tt / ts, median(bw[c, "space", sz]) / mc, \
					median(bw[c, "cma", sz]) / mc, median(bw[c, "two", sz]) / mc, \
					algo[c, "two", sz]
			}
	}' outdir="$OUT" "$OUT"/*.space.*.txt "$OUT"/*.cma.*.txt "$OUT"/*.two.*.txt | tee "$OUT/summary.txt"
