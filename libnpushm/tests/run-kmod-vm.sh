#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-kmod-vm.sh - the libnpushm suite on the kmod backend: boots the test VM
# (selftests/vm/run-vm.sh), loads kmod/npushm.ko (with-module.sh) and runs
# run-tests.sh there with NPUSHM_BACKEND=kmod. The guest writes its TAP to the
# VM's result share; this script prints it and returns the guest's status
# (non-zero also on any kernel warning). Prints one SKIP when the module has
# not been built, which is the only thing that keeps this suite from running.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$root/build}
cd "$root" || exit 1
if [ ! -f kmod/npushm.ko ]; then
	echo "1..1"
	echo "ok 1 - libnpushm on kmod # SKIP kmod/npushm.ko is not built (make modules)"
	exit 0
fi
out=$BUILD/vm/libnpushm
mkdir -p "$out"
rm -f "$out/libnpushm.tap"
VM_QUIET=1 selftests/vm/run-vm.sh -o "$out" -t "${LIBNPUSHM_VM_TIMEOUT:-400}" -- \
	selftests/vm/with-module.sh sh -c "NPUSHM_BACKEND=kmod libnpushm/tests/run-tests.sh > '$out/libnpushm.tap' 2>&1"
rc=$?
cat "$out/libnpushm.tap" 2>/dev/null || echo "# no TAP came back from the VM (see $out/console.log)"
[ "$rc" = 0 ] || echo "# the VM run ended with status $rc (see $out/console.log)"
exit $rc
