#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-tests.sh - the libnpushm test suite as one TAP stream: the C tests
# (build/tests/libnpushm-*-test, kselftest_harness.h programs), the npushm command
# (test_cli.py) and the Python package (test_python.py, both under pytest),
# renumbered into one plan, then a final
# check that nothing was left behind (no region, no tmpfs file).
#
#   NPUSHM_BACKEND=posix|kmod run-tests.sh
#
# Backend posix (default): the Python parts get a private directory under
# /dev/shm as NPUSHM_SHM_DIR, removed afterwards. Backend kmod: run it where
# the module is loaded and its instance mounted (make check-libnpushm-kmod does so in the VM: selftests/vm/vm-suite.sh).
# Exit status 1 if any test failed.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$root/build}
NPUSHM_BACKEND=${NPUSHM_BACKEND:-posix}
PY=/usr/bin/python3
export BUILD NPUSHM_BACKEND
# On kmod a tmpfs directory handed down from the host (run-vm.sh passes NPUSHM_*
# on) would not exist in the VM; the posix parts below choose their own.
[ "$NPUSHM_BACKEND" = kmod ] && unset NPUSHM_SHM_DIR
cd "$root" || exit 1

. "$root/tools/tap.sh"
TAP_PART_TIMES=1
cleanup() { [ -n "${shmdir:-}" ] && rm -rf "$shmdir"; }
trap cleanup EXIT

echo "# libnpushm tests, backend $NPUSHM_BACKEND"
# The header and export checks concern the build, not the backend: natively only
# (compiling under TCG costs half a minute).
if [ "${NPUSHM_IN_VM:-0}" != 1 ]; then
	part abi "$here/check-abi.sh"
fi
for t in "$BUILD"/tests/libnpushm-*-test; do
	# the RDMA registration test needs a device: suite ccl-rdma runs it
	[ "${t##*/}" = libnpushm-rdma-reg-test ] && continue
	part c "$t"
done
if [ "$NPUSHM_BACKEND" = posix ]; then
	shmdir=/dev/shm/npushm-pytests.$$
	mkdir -m 1777 "$shmdir" && export NPUSHM_SHM_DIR="$shmdir"
fi
part cli "$root/tools/run-pytest.sh" "$here/test_cli.py"
part python env PYTHONPATH="$root/python" "$root/tools/run-pytest.sh" "$here/test_python.py"

# Nothing may be left behind: no region visible to `npushm ls`, no tmpfs file.
left=$("$BUILD/bin/npushm" ls --json | "$PY" -c 'import json,sys; r=json.load(sys.stdin)["regions"]; print(" ".join(n["name"] for x in r for n in x["names"]) or ("%d unnamed" % len(r) if r else ""))')
if [ -z "$left" ] && { [ -z "${shmdir:-}" ] || [ -z "$(ls -A "$shmdir")" ]; }; then
	result 0 "nothing left behind (no region, no shared-memory file)"
else
	result 1 "nothing left behind: $left $(ls -A "${shmdir:-/nonexistent}" 2>/dev/null)"
fi
tap_end
