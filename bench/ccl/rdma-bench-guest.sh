#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# rdma-bench-guest.sh - inside the test VM (root; run-rdma-bench.sh boots it):
# two soft-RoCE "hosts" (ccl/tests/rdma/topology.sh), npccl-perf between them
# over the RDMA transport and over TCP, taking turns run by run (so a change
# of load hits both alike), RUNS runs each; then Open MPI's build of the same harness (mpi-perf-openmpi) over the
# same soft-RoCE devices (UCX, then the openib BTL) and over TCP, where its
# Debian build can; then caller buffers over RDMA registered and watched vs
# copied vs npccl_mem_alloc buffers. The VM is emulated (TCG): only ratios
# mean anything.
#   rdma-bench-guest.sh OUTDIR [RUNS]
OUT=${1:?usage: rdma-bench-guest.sh OUTDIR [RUNS]}
RUNS=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$root/build}
# npccl-perf (installed program) and the Open MPI build of its harness
BIN=$BUILD/bin BENCH=$BUILD/bench
. "$root/ccl/tests/rdma/topology.sh"
trap topo_down EXIT INT TERM
mkdir -p "$OUT"
echo "# rdma-bench: $(nproc) vCPUs (TCG), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
lscpu | grep -i -E "model name|cache" | sed 's/^/# /'
topo_up 2 || { echo "soft-RoCE hosts could not be created"; exit 1; }
# TCP's veths as the RDMA ones: 9000-byte frames
for h in 1 2; do
	ip -n "${TOPO_P}h$h" link set "${TOPO_P}t$h" mtu 9000
	ip link set "${TOPO_P}T$h" mtu 9000
done
ip link set "${TOPO_P}tbr" mtu 9000
port=$((40000 + $$ % 10000))
ARGS="-b 8 -e 4M -f 8 -t 0.3 -w 3"
# perf NAME TRANSPORT COLL [VARIANT [CCL-PERF-ARGS [VAR=VALUE...]]]: one 2-rank
# run, rank r on host r+1; its table is added to npccl-VARIANT-COLL.txt
# (VARIANT: the transport by default)
perf() {
	port=$((port + 1))
	for r in 0 1; do
		RANK=$r WORLD_SIZE=2 MASTER_ADDR=198.18.0.1 MASTER_PORT=$port NPCCL_TRANSPORT=$2 \
			topo_exec $((r + 1)) timeout -k 5 300 env ${6:-} "$BIN/npccl-perf" -c "$3" $ARGS ${5:-} \
			>"$OUT/$1.$r" 2>&1 &
	done
	wait
	cat "$OUT/$1.0" >>"$OUT/npccl-${4:-$2}-$3.txt"
}
# Open MPI over the same devices: ranks in the namespaces through netns-rsh
CCLB_NS_PREFIX=${TOPO_P}h
export CCLB_NS_PREFIX
# rank r's device: its host's (the wrapper reads the host from its namespace's address)
cat >"$OUT/ompi-dev.sh" <<SH
#!/bin/sh
h=\$(ip -4 -o addr show | sed -n 's/.* 198\.18\.0\.\([0-9]*\)\/.*/\1/p' | head -1)
export UCX_NET_DEVICES=${TOPO_P}rxe\$h:1 OMPI_MCA_btl_openib_if_include=${TOPO_P}rxe\$h
exec "\$@"
SH
chmod +x "$OUT/ompi-dev.sh"
ompi() {	# NAME MCA-ARGS...
	_n=$1
	shift
	# mpirun in host 1's namespace, so that its daemons can call it back
	topo_exec 1 timeout -k 5 300 mpirun.openmpi --allow-run-as-root -np 2 --host 198.18.0.1,198.18.0.2 \
		--mca plm_rsh_agent "$root/bench/ccl/netns-rsh" --mca btl_tcp_if_include 198.18.0.0/24 \
		--mca oob_tcp_if_include 198.18.0.0/24 "$@" "$OUT/ompi-dev.sh" "$BENCH/mpi-perf-openmpi" \
		-c allreduce $ARGS >"$OUT/ompi-$_n.txt" 2>&1
	echo "# open mpi $_n: exit $?"
}
for coll in allreduce broadcast; do
	for i in $(seq 1 "$RUNS"); do	# RUNS=0: Open MPI only
		perf "$coll-rdma-$i" rdma "$coll"
		perf "$coll-tcp-$i" tcp "$coll"
		# Open MPI over TCP between the same namespaces, in the same turn
		[ "$coll" = allreduce ] && [ -x "$BENCH/mpi-perf-openmpi" ] &&
			ompi tcp-$i --mca pml ob1 --mca btl tcp,self && cat "$OUT/ompi-tcp-$i.txt" >>"$OUT/ompi-tcp.txt"
		echo "# $coll run $i done, load $(cut -d' ' -f1 /proc/loadavg)"
	done
done

# caller buffers over RDMA: registered and watched (the default), copied
# through the FIFO (NPCCL_RDMA_CACHE_BYTES=0), npccl_mem_alloc buffers; and
# with a newly mapped output buffer for every call (every call a miss)
for i in $(seq 1 "$RUNS"); do
	perf "cache-$i" rdma allreduce cached
	perf "copy-$i" rdma allreduce copied "" NPCCL_RDMA_CACHE_BYTES=0
	perf "shared-$i" rdma allreduce shared --shared
	perf "fresh-$i" rdma allreduce fresh-cached --fresh
	perf "fresh-copy-$i" rdma allreduce fresh-copied --fresh NPCCL_RDMA_CACHE_BYTES=0
	echo "# registration cache run $i done, load $(cut -d' ' -f1 /proc/loadavg)"
done

if [ -x "$BENCH/mpi-perf-openmpi" ]; then
	ompi ucx --mca pml ucx -x UCX_TLS=rc,self
	ompi ucx-rcv-tcp --mca pml ucx -x UCX_TLS=rc_verbs,tcp,self
	ompi openib --mca pml ob1 --mca btl openib,self --mca btl_openib_allow_ib 1 \
		--mca btl_openib_cpc_include udcm
	[ "$RUNS" = 0 ] && ompi tcp --mca pml ob1 --mca btl tcp,self
else
	echo "# no mpi-perf-openmpi"
fi
echo "# done, load $(cut -d' ' -f1-3 /proc/loadavg)"
