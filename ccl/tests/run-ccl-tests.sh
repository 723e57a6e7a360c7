#!/bin/sh
# run-ccl-tests.sh - the "ccl" suite: unit tests, the collective matrix over
# shared memory (1..8 ranks) and TCP (NPCCL_DISABLE_SHM=1, 1..5 ranks),
# API/bootstrap negatives, fault injection, non-blocking calls, threads,
# groups and key-value bootstrap (shm and TCP), the cluster model load
# (npccl_model_load across three TCP "hosts"), and launches by real mpirun
# (Open MPI and MPICH). Each part runs under `timeout` so a hang fails the
# suite instead of blocking it. Output: one TAP stream.
BIN=${1:?usage: run-ccl-tests.sh BINDIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d /tmp/ccl-tests.XXXXXX)
trap 'rm -rf "$out"' EXIT
n=0 fail=0

# run PART TIMEOUT CMD...: fold the part's TAP into ours (tools/tap-part)
run() {
	part=$1 tmo=$2
	shift 2
	timeout -k 5 "$tmo" "$@" >"$out/$part.out" 2>"$out/$part.err"
	rc=$?
	note="part $part"
	[ "$rc" = 124 ] && note="$note, timed out after ${tmo}s"
	"$root/tools/tap-part" "$n" "" "$rc" "$out/state" "$note" <"$out/$part.out"
	set -- $(cat "$out/state")
	n=$((n + $1)) fail=$((fail + $2))
	if [ "$rc" != 0 ]; then
		sed 's/^/# /' "$out/$part.err" | tail -20
	fi
}

run unit 60 "$BIN/ccl-unit-test"
run matrix-shm 200 "$BIN/ccl-test" matrix --ranks 1-8
run matrix-tcp 180 "$BIN/ccl-test" matrix --tcp --ranks 2-5
run misc 120 "$BIN/ccl-test" misc
run shm 150 "$BIN/ccl-test" shm
run faults 180 "$BIN/ccl-test" fault
run async 150 "$BIN/ccl-async-test"
run async-tcp 150 "$BIN/ccl-async-test" --tcp
run model-load 150 "$root/ccl/tests/model-load-test.sh" "$BIN"

# real launchers: Open MPI and MPICH start the ranks, npccl_comm_init_env finds them
for mpi in openmpi mpich; do
	runner=$(command -v mpirun.$mpi)
	if [ -z "$runner" ]; then
		n=$((n + 1))
		echo "ok $n - launch by mpirun.$mpi # SKIP mpirun.$mpi not installed"
		continue
	fi
	extra=""
	[ $mpi = openmpi ] && extra="--allow-run-as-root --oversubscribe"
	timeout -k 5 60 "$runner" $extra -np 3 "$BIN/ccl-test" env-worker >"$out/$mpi.out" 2>&1
	rc=$?
	good=$(grep -c '^envcheck rank .* ok' "$out/$mpi.out")
	n=$((n + 1))
	if [ "$rc" = 0 ] && [ "$good" = 3 ]; then
		echo "ok $n - launch by mpirun.$mpi -np 3: init from its environment, collectives correct"
	else
		fail=$((fail + 1))
		echo "not ok $n - launch by mpirun.$mpi -np 3 (exit $rc, $good of 3 ranks ok)"
		sed 's/^/# /' "$out/$mpi.out" | tail -20
	fi
done

# torchrun-style variables on one host
port=$((20000 + $$ % 20000))
pids=""
for r in 0 1 2 3; do
	RANK=$r WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
		timeout -k 5 60 "$BIN/ccl-test" env-worker >"$out/torch.$r" 2>&1 &
	pids="$pids $!"
done
ok=1
for p in $pids; do wait "$p" || ok=0; done
n=$((n + 1))
if [ $ok = 1 ] && [ "$(cat "$out"/torch.* | grep -c '^envcheck rank .* ok')" = 4 ]; then
	echo "ok $n - torchrun-style RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, 4 ranks"
else
	fail=$((fail + 1))
	echo "not ok $n - torchrun-style environment, 4 ranks"
	cat "$out"/torch.* | sed 's/^/# /' | tail -20
fi
# NPCCL_TRANSPORT: a bad value fails communicator creation; rdma without a device
# on a pair of hosts (here every rank its own "host") fails on every rank naming why
port=$((port + 1))
NPCCL_TRANSPORT=rdmaa RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
	timeout -k 5 60 "$BIN/ccl-test" env-worker >"$out/badtransport.0" 2>&1
n=$((n + 1))
if grep -q "init: .*NPCCL_TRANSPORT=rdmaa is not a transport" "$out/badtransport.0"; then
	echo "ok $n - NPCCL_TRANSPORT=rdmaa: communicator creation fails saying what the values are"
else
	fail=$((fail + 1))
	echo "not ok $n - NPCCL_TRANSPORT=rdmaa was not refused"
	sed 's/^/# /' "$out/badtransport.0" | tail -5
fi
n=$((n + 1))
if [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
	echo "ok $n - NPCCL_TRANSPORT=rdma without a device # SKIP this host has RDMA devices (the VM suite ccl-rdma covers it)"
else
	port=$((port + 1))
	pids=""
	for r in 0 1; do
		NPCCL_TRANSPORT=rdma NPCCL_DISABLE_SHM=1 RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
			MASTER_PORT=$port timeout -k 5 60 "$BIN/ccl-test" env-worker >"$out/needrdma.$r" 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	if [ "$(grep -l "init: .*NPCCL_TRANSPORT=rdma on rank .* has no usable RDMA device" "$out"/needrdma.[01] | wc -l)" = 2 ]; then
		echo "ok $n - NPCCL_TRANSPORT=rdma between two hosts without RDMA devices: both ranks fail at creation naming the rank without one (no fall-back to TCP)"
	else
		fail=$((fail + 1))
		echo "not ok $n - NPCCL_TRANSPORT=rdma without devices was not refused on both ranks"
		cat "$out"/needrdma.[01] | sed 's/^/# /' | tail -6
	fi
fi
echo "1..$n"
[ "$fail" = 0 ]
