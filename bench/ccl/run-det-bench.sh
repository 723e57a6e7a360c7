#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-det-bench.sh - what deterministic reductions (NPCCL_DETERMINISTIC=1, the
# canonical rank-order algorithm) cost against the default (cost model), per
# size, with the same harness (npccl-perf, float32 sums, private buffers):
# AllReduce, ReduceScatter and Reduce, on one host (shared memory) and over
# TCP (NPCCL_DISABLE_SHM=1: every rank its own "host" on loopback). Default
# and deterministic runs alternate band by band, so a change of load hits
# both alike. Prints per size the out-of-place time of each, the algorithm
# the default used, and the ratios deterministic / default (p50 and mean;
# times in microseconds).
#
#   bench/ccl/run-det-bench.sh [-n RANKS] [-e MAXBYTES] [-t SECONDS] [--quick]
#
# Run from the repository root after `make`; writes build/bench/ccl/det-*.txt.
# Check `uptime` first: the machine is shared.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
BIN=$BUILD/bin
OUT=$BUILD/bench/ccl
mkdir -p "$OUT"
N=2 MAXB=64M T=0.5
while [ $# -gt 0 ]; do
	case $1 in
	-n) N=$2; shift ;;
	-e) MAXB=$2; shift ;;
	-t) T=$2; shift ;;
	--quick) MAXB=4M; T=0.1 ;;
	*) echo "usage: $0 [-n RANKS] [-e MAXBYTES] [-t SECONDS] [--quick]" >&2; exit 2 ;;
	esac
	shift
done
[ -x "$BIN/npccl-perf" ] || { echo "$BIN/npccl-perf missing: run make" >&2; exit 1; }
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE NPCCL_ALGO NPCCL_DETERMINISTIC

echo "# run-det-bench: $(date -u +%Y-%m-%dT%H:%MZ), $N ranks, $(nproc) cores, $(uname -r)"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
lscpu | grep -i 'cache' | sed 's/^/# /'
BANDS="8:4K 8K:256K 512K:4M 8M:$MAXB"
bind=""
[ "$N" -le "$(nproc)" ] && bind=--bind

for coll in allreduce reduce_scatter reduce; do
	for tp in shm tcp; do
		base=$OUT/det-$coll-$tp
		rm -f "$base".default.txt "$base".det.txt
		env=""
		[ $tp = tcp ] && env="NPCCL_DISABLE_SHM=1"
		for band in $BANDS; do
			b=${band%:*} e=${band#*:}
			args="-n $N $bind -c $coll -b $b -e $e -f 4 -t $T"
			env $env "$BIN/npccl-perf" $args >>"$base.default.txt" 2>&1
			env $env NPCCL_DETERMINISTIC=1 "$BIN/npccl-perf" $args >>"$base.det.txt" 2>&1
		done
		echo
		echo "## $coll over $tp, $N ranks, float32 sum, out of place"
		printf '%12s %10s %10s %13s %10s %10s %8s %8s\n' "size (B)" "def mean" "def p50" \
			"default algo" "det mean" "det p50" "p50 x" "mean x"
		# size, out-of-place mean time, p50 and algorithm of each data line, joined by size
		awk '!/^#/ && NF > 8 { print $1, $6, $16, $NF }' "$base.default.txt" | sort -n >"$base.d"
		awk '!/^#/ && NF > 8 { print $1, $6, $16 }' "$base.det.txt" | sort -n >"$base.c"
		join "$base.d" "$base.c" |
			awk '{ printf "%12s %10.2f %10.2f %13s %10.2f %10.2f %8.2f %8.2f\n", $1, $2, $3, $4,
				$5, $6, $6 / $3, $5 / $2 }'
		bad=$(awk '!/^#/ && NF > 8 && ($9 != 0 || $13 != 0)' "$base.default.txt" "$base.det.txt" | wc -l)
		[ "$bad" = 0 ] || echo "# $bad sizes with wrong results: see $base.*.txt"
		rm -f "$base.d" "$base.c"
	done
done
echo
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
