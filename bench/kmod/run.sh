#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# run.sh - make bench-kmod: npushm regions vs memfd and POSIX shm, in the VM
# (the host cannot load modules). Prints the machine (lscpu caches, load),
# boots the VM with the module and an instance at /run/npushm, and runs
# npushm-bench-kmod there; the table goes to stdout and to $BUILD/vm/bench-kmod/.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$here/build}
out=$BUILD/vm/bench-kmod
mkdir -p "$out"
rm -f "$out/kmod.md"
echo "# $(date -u '+%F %H:%M UTC'), host load: $(uptime | sed 's/.*load average: //')"
lscpu | grep -E '^(Model name|CPU\(s\)|L1d|L2|L3)' | sed 's/^/# /'
echo "# VM: qemu TCG, Debian's $(cat "$BUILD/kernel/abi" 2>/dev/null), 2 vCPUs, 6 GiB; pool capacity 3G, no uid quota"
cd "$here"
NPUSHM_TEST_PARAMS="capacity=3G uid_quota=0" VM_QUIET=1 selftests/vm/run-vm.sh -m 6G -t 3600 -o "$out" -- \
	selftests/vm/with-module.sh sh -c "'$BUILD/bench/npushm-bench-kmod' /run/npushm > '$out/kmod.md'"
cat "$out/kmod.md"
echo "# host load after: $(uptime | sed 's/.*load average: //')"
