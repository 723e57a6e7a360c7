#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-copy-bench.sh - how private buffers move between two ranks of one host:
# a single copy through the npushm module's spaces, a single copy by
# cross-memory attach (process_vm_readv), and two copies through shared
# memory (the best algorithm without single copies), for AllGather,
# Broadcast and AllReduce at 64 KiB, 1 MiB and 16 MiB; single-core memcpy as
# the ceiling. Spaces need the module, so everything runs in the test VM
# (bench/ccl/copy-bench-guest.sh, the three paths taking turns run by run);
# the VM is emulated (TCG): only the ratios mean anything. Run as root from
# the repository root after make, make modules and make setup.
#   bench/ccl/run-copy-bench.sh [RUNS]        (default 3)
# Results under build/bench/copy/ (summary.txt: the ratio table).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=$BUILD/bench/copy
rm -rf "$OUT" && mkdir -p "$OUT"
echo "# run-copy-bench: $(date -u +%Y-%m-%dT%H:%MZ), host load $(cut -d' ' -f1-3 /proc/loadavg)"
cc -O2 -o "$BUILD/bench/memcpy-bw" "$ROOT/bench/ccl/memcpy_bw.c" || exit 1
cd "$ROOT" || exit 1
VM_QUIET=1 selftests/vm/run-vm.sh -m 2G -o "$OUT" -t 3000 -- selftests/vm/with-module.sh \
	sh -c "bench/ccl/copy-bench-guest.sh '$OUT' ${1:-3} > '$OUT/guest.log' 2>&1"
echo "# VM exit status $?; host load after $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$OUT/guest.log"
