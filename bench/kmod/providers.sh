#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# providers.sh - make bench-kmod-providers: what a region costs on each
# provider against sysmem, in the VM (qemu TCG: ratios only): make + map +
# first touch, and open by name + map, on instances of sysmem, the
# memory-only node 1 (node:1) and an ivshmem-plain PCI BAR (bar:ADDR).
# Prints the machine and the load; the table goes to stdout and to
# $BUILD/vm/bench-kmod-providers/.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$here/build}
out=$BUILD/vm/bench-kmod-providers
bar=0000:01:00.0
mkdir -p "$out"
rm -f "$out/providers.md"
echo "# $(date -u '+%F %H:%M UTC'), host load: $(uptime | sed 's/.*load average: //')"
lscpu | grep -E '^(Model name|CPU\(s\)|L1d|L2|L3)' | sed 's/^/# /'
echo "# VM: qemu TCG, Debian's $(cat "$BUILD/kernel/abi" 2>/dev/null), 2 vCPUs, 2 GiB (node 1: 256 MiB, no CPU), ivshmem BAR 2: 128 MiB"
cd "$here"
# shellcheck disable=SC2016
NPUSHM_TEST_PARAMS="capacity=1G uid_quota=0 bars=$bar@2" VM_NUMA_NODE1=256 VM_IVSHMEM=128 VM_QUIET=1 \
	selftests/vm/run-vm.sh -m 2G -t 3600 -o "$out" -- selftests/vm/with-module.sh sh -c '
	mkdir -p /run/npushm-node1 /run/npushm-bar &&
	mount -t npushm -o provider=node:1 npushm /run/npushm-node1 &&
	mount -t npushm -o provider=bar:'"$bar"' npushm /run/npushm-bar &&
	"$0" --providers /run/npushm sysmem /run/npushm-node1 node:1 /run/npushm-bar bar > "$1"
	rc=$?; umount /run/npushm-node1 /run/npushm-bar; exit $rc' "$BUILD/bench/npushm-bench-kmod" "$out/providers.md"
cat "$out/providers.md"
echo "# host load after: $(uptime | sed 's/.*load average: //')"
