#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-ccl-perf.sh - npccl vs Open MPI 4.1 vs MPICH 4.0, side by side, with
# the same harness (bench/ccl/perf.c) built three times: npccl-perf (npccl,
# by make), and mpi-perf-openmpi / mpi-perf-mpich (build/bench) with their mpicc here.
# npccl runs twice on one host: with private buffers (as the MPIs) and, for
# AllReduce, with buffers from npccl_mem_alloc (--shared: zero-copy path).
# 2 ranks bound to the 2 cores:
#   1. intra-host; ceiling: single-core memcpy bandwidth;
#   2. across two network namespaces joined by a veth pair (198.18.1.1/2);
#      ceiling: iperf3 on the same veth (one stream; both directions from one process;
#      two streams in opposite directions at once, one process per end).
#
#   bench/ccl/run-ccl-perf.sh [-c COLL] [-e MAXBYTES] [-t SECONDS] [--quick]
#
# Each namespace is a "host" that sees both cores, so MPI's own binding would
# put both ranks on core 0 there: bench/ccl/bind-by-rank pins rank r to core r.
# Run as root from the repository root after `make`. Prints the tables and a
# summary; writes everything under build/bench/ccl/. Unset OPENBLAS_* (not
# used here). Check `uptime` first: the machine is shared.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
BIN=$BUILD/bin BENCH=$BUILD/bench
mkdir -p "$BENCH"
OUT=$BUILD/bench/ccl
mkdir -p "$OUT"
COLL=allreduce MAXB=256M T=0.5 QUICK=0
while [ $# -gt 0 ]; do
	case $1 in
	-c) COLL=$2; shift ;;
	-e) MAXB=$2; shift ;;
	-t) T=$2; shift ;;
	--quick) QUICK=1; MAXB=16M; T=0.1 ;;
	esac
	shift
done
ARGS="-c $COLL -b 8 -e $MAXB -f 2 -t $T --odd"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

echo "# run-ccl-perf: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -r)"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# command: $0 -c $COLL -e $MAXB -t $T"

# --- build the MPI variants of the same harness
for mpi in openmpi mpich; do
	mpicc.$mpi -O2 -o "$BENCH/mpi-perf-$mpi" "$ROOT/bench/ccl/perf.c" "$ROOT/bench/ccl/backend_mpi.c" -lm ||
		{ echo "cannot build mpi-perf-$mpi" >&2; exit 1; }
done
cc -O2 -o "$BENCH/memcpy-bw" "$ROOT/bench/ccl/memcpy_bw.c"
[ -x "$BIN/npccl-perf" ] || { echo "build/bin/npccl-perf missing: run make" >&2; exit 1; }

echo
echo "## ceiling: single-core memcpy"
taskset -c 0 "$BENCH/memcpy-bw" $((64 << 20)) | tee "$OUT/memcpy.txt"

OMPI="mpirun.openmpi --allow-run-as-root -np 2 --bind-to core --map-by core"
MPICH="mpirun.mpich -np 2 -bind-to core"
# The three backends take turns band by band, so a change of machine load
# during the run hits all of them alike instead of one.
BANDS="8:1K 2K:64K 128K:2M 4M:32M 64M:$MAXB"

echo
echo "## intra-host, 2 ranks bound to cores 0 and 1 (backends interleaved by size band)"
rm -f "$OUT"/intra-*.txt
# settle: MPI ranks may still be spinning in their finalize for a moment
# after mpirun returns; npccl measures its cost model at init and must not
# share the cores with them
settle() {
	i=0
	while pgrep -f "mpi-perf-(openmpi|mpich)" >/dev/null && [ $i -lt 50 ]; do
		i=$((i + 1)); sleep 0.2
	done
	sleep 1
}
for band in $BANDS; do
	b=${band%:*} e=${band#*:}
	settle
	BARGS="-c $COLL -b $b -e $e -f 2 -t $T --odd"
	"$BIN/npccl-perf" -n 2 --bind $BARGS >>"$OUT/intra-npccl.txt"
	[ "$COLL" = allreduce ] && "$BIN/npccl-perf" -n 2 --bind --shared $BARGS >>"$OUT/intra-npccl-shared.txt"
	$OMPI "$BENCH/mpi-perf-openmpi" $BARGS >>"$OUT/intra-openmpi.txt" 2>&1
	$MPICH "$BENCH/mpi-perf-mpich" $BARGS >>"$OUT/intra-mpich.txt" 2>&1
	echo "# band $band done, load $(cut -d' ' -f1 /proc/loadavg)"
done
for b in npccl npccl-shared openmpi mpich; do
	[ -f "$OUT/intra-$b.txt" ] && { echo "### $b"; cat "$OUT/intra-$b.txt"; }
done

echo
echo "## intra-host, out-of-place output freshly mapped for every call (page faults included)"
FARGS="-c $COLL -b 1M -e 64M -f 8 -t $T --fresh"
settle
"$BIN/npccl-perf" -n 2 --bind $FARGS | tee "$OUT/fresh-npccl.txt"
$OMPI "$BENCH/mpi-perf-openmpi" $FARGS 2>&1 | tee "$OUT/fresh-openmpi.txt"
$MPICH "$BENCH/mpi-perf-mpich" $FARGS 2>&1 | tee "$OUT/fresh-mpich.txt"

# --- two "hosts": network namespaces joined by one veth pair
P=cclb$$
CCLB_NS_PREFIX=${P}h
export CCLB_NS_PREFIX
cleanup() {
	for x in 1 2; do
		ip netns pids "${P}h$x" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "${P}h$x" 2>/dev/null
	done
}
trap cleanup EXIT INT TERM
ip netns add "${P}h1" && ip netns add "${P}h2" || { echo "need root for namespaces" >&2; exit 1; }
ip link add "${P}a" type veth peer name "${P}b"
ip link set "${P}a" netns "${P}h1"
ip link set "${P}b" netns "${P}h2"
for x in 1 2; do
	dev=$([ $x = 1 ] && echo "${P}a" || echo "${P}b")
	ip -n "${P}h$x" link set lo up
	ip -n "${P}h$x" addr add "198.18.1.$x/24" dev "$dev"
	ip -n "${P}h$x" link set "$dev" up
done
i=0
until ip -n "${P}h1" link show "${P}a" | grep -q "state UP" || [ $i -ge 25 ]; do
	i=$((i + 1)); sleep 0.2
done

echo
echo "## ceiling: iperf3 on the veth (one stream, 5 s, client on core 0, server on core 1)"
ip netns exec "${P}h2" taskset -c 1 iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
sleep 0.5
ip netns exec "${P}h1" taskset -c 0 iperf3 -c 198.18.1.2 -p 5201 -t 5 -f g 2>&1 | tee "$OUT/iperf3.txt" | grep -E "sender|receiver"
wait
ip netns exec "${P}h2" taskset -c 1 iperf3 -s -1 -p 5202 >/dev/null 2>&1 &
sleep 0.5
echo "# bidirectional (both directions at once, as an AllReduce uses the link):"
ip netns exec "${P}h1" taskset -c 0 iperf3 -c 198.18.1.2 -p 5202 -t 5 -f g --bidir 2>&1 | tee "$OUT/iperf3-bidir.txt" | grep -E "SUM|sender|receiver" | tail -4
wait
# Two streams in opposite directions at once, each end its own process on the core its rank
# uses (rank 0: namespace 1, core 0; rank 1: namespace 2, core 1), as a 2-rank AllReduce uses them.
echo "# two streams in opposite directions at once, one iperf3 process per end, ends on the ranks' cores:"
ip netns exec "${P}h2" taskset -c 1 iperf3 -s -1 -p 5203 >/dev/null 2>&1 &
ip netns exec "${P}h1" taskset -c 0 iperf3 -s -1 -p 5204 >/dev/null 2>&1 &
sleep 0.5
ip netns exec "${P}h1" taskset -c 0 iperf3 -c 198.18.1.2 -p 5203 -t 5 -f g >"$OUT/iperf3-opp-1to2.txt" 2>&1 &
ip netns exec "${P}h2" taskset -c 1 iperf3 -c 198.18.1.1 -p 5204 -t 5 -f g >"$OUT/iperf3-opp-2to1.txt" 2>&1
wait
grep -h receiver "$OUT/iperf3-opp-1to2.txt" "$OUT/iperf3-opp-2to1.txt"

echo
echo "## across two network namespaces over veth, 1 rank per namespace"
echo "### npccl (TCP)"
port=$((40000 + $$ % 20000))
ip netns exec "${P}h2" env NPCCL_RANK=1 NPCCL_NRANKS=2 NPCCL_ROOT_ADDR=198.18.1.1:$port \
	taskset -c 1 "$BIN/npccl-perf" $ARGS >/dev/null 2>"$OUT/tcp-npccl.err" &
ip netns exec "${P}h1" env NPCCL_RANK=0 NPCCL_NRANKS=2 NPCCL_ROOT_ADDR=198.18.1.1:$port \
	taskset -c 0 "$BIN/npccl-perf" $ARGS 2>&1 | tee "$OUT/tcp-npccl.txt"
wait

printf '198.18.1.1 slots=1\n198.18.1.2 slots=1\n' >"$OUT/hostfile"
echo "### Open MPI (TCP BTL, one rank per namespace, launched through netns-rsh)"
ip netns exec "${P}h1" unshare --uts /bin/sh -c "hostname host1; mpirun.openmpi --allow-run-as-root -np 2 \
	--hostfile $OUT/hostfile --mca plm_rsh_agent $ROOT/bench/ccl/netns-rsh \
	--mca btl tcp,self --mca btl_tcp_if_include 198.18.1.0/24 --mca oob_tcp_if_include 198.18.1.0/24 \
	--bind-to none $ROOT/bench/ccl/bind-by-rank $BENCH/mpi-perf-openmpi $ARGS" 2>&1 | tee "$OUT/tcp-openmpi.txt"
echo "### MPICH (one rank per namespace, launched through netns-rsh, UCX_TLS=tcp,self: Debian's MPICH is ch4:ucx and UCX would otherwise use shared memory between the namespaces)"
ip netns exec "${P}h1" unshare --uts /bin/sh -c "hostname host1; mpirun.mpich -launcher ssh \
	-launcher-exec $ROOT/bench/ccl/netns-rsh -hosts 198.18.1.1,198.18.1.2 -n 2 -genv UCX_TLS tcp,self \
	$ROOT/bench/ccl/bind-by-rank $BENCH/mpi-perf-mpich $ARGS" 2>&1 | tee "$OUT/tcp-mpich.txt"

echo
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$ROOT/bench/ccl/summarize.py" "$OUT"
