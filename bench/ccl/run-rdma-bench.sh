#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-rdma-bench.sh - npccl-perf over the RDMA transport vs TCP between two
# soft-RoCE hosts in the test VM, and Open MPI over the same devices where
# its Debian build can (bench/ccl/rdma-bench-guest.sh); then the ratio table
# (bench/ccl/rdma_summary.py). Run as root from the repository root after
# make, make modules and make setup. Timings in the VM are emulated: ratios
# only. Results under build/bench/rdma/.
#   bench/ccl/run-rdma-bench.sh [RUNS]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=$BUILD/bench/rdma
rm -rf "$OUT" && mkdir -p "$OUT"
echo "# run-rdma-bench: $(date -u +%Y-%m-%dT%H:%MZ), host load $(cut -d' ' -f1-3 /proc/loadavg)"
mpicc.openmpi -O2 -o "$BUILD/bench/mpi-perf-openmpi" "$ROOT/bench/ccl/perf.c" \
	"$ROOT/bench/ccl/backend_mpi.c" -lm || echo "# cannot build mpi-perf-openmpi"
cd "$ROOT" || exit 1
VM_QUIET=1 selftests/vm/run-vm.sh -m 2G -o "$OUT" -t 2400 -- \
	sh -c "bench/ccl/rdma-bench-guest.sh '$OUT' ${1:-3} > '$OUT/guest.log' 2>&1"
echo "# VM exit status $?; host load after $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$OUT/guest.log"
/usr/bin/python3 "$ROOT/bench/ccl/rdma_summary.py" "$OUT"
