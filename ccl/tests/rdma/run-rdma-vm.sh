#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-rdma-vm.sh - the "ccl-rdma" suite: boots the test VM
# (selftests/vm/run-vm.sh), loads kmod/npushm.ko (with-module.sh) and runs
# rdma-guest.sh there (soft-RoCE hosts in network namespaces). The guest
# writes its TAP to the VM's result share; this script prints it and returns
# the guest's status (non-zero also on any kernel warning). Prints one SKIP
# when the module has not been built (the guest registers kmod regions).
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
BUILD=${BUILD:-$root/build}
cd "$root" || exit 1
if [ ! -f kmod/npushm.ko ]; then
	echo "1..1"
	echo "ok 1 - ccl over RDMA # SKIP kmod/npushm.ko is not built (make modules)"
	exit 0
fi
out=$BUILD/vm/ccl-rdma
mkdir -p "$out"
rm -f "$out/rdma.tap"
VM_QUIET=1 selftests/vm/run-vm.sh -m 2G -o "$out" -t "${CCL_RDMA_VM_TIMEOUT:-600}" -- \
	selftests/vm/with-module.sh sh -c "ccl/tests/rdma/rdma-guest.sh '$BUILD/bin' > '$out/rdma.tap' 2>&1"
rc=$?
cat "$out/rdma.tap" 2>/dev/null || echo "# no TAP came back from the VM (see $out/console.log)"
[ "$rc" = 0 ] || echo "# the VM run ended with status $rc (see $out/console.log)"
exit $rc
