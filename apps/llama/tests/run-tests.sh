#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-tests.sh - the Llama engine's test suite as one TAP stream: the tests
# against the plain-PyTorch reference and of every refusal (test_llama.py,
# pytest), of the C API called with bad arguments (test_api.py), then a check
# that nothing was left behind.
#
#   NPUSHM_BACKEND=posix|kmod run-tests.sh
#
# Backend posix (default): everything happens in a private tmpfs directory
# (NPUSHM_SHM_DIR) removed afterwards, sticky and writable by all as /dev/shm
# is: the prefix trust tests publish as another uid.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
BUILD=${BUILD:-$root/build}
NPUSHM_BACKEND=${NPUSHM_BACKEND:-posix}
export BUILD NPUSHM_BACKEND
cd "$root" || exit 1

. "$root/tools/tap.sh"
TAP_PART_TIMES=1
shmdir=
cleanup() { [ -n "$shmdir" ] && rm -rf "$shmdir"; }
trap cleanup EXIT
if [ "$NPUSHM_BACKEND" = posix ]; then
	shmdir=/dev/shm/npllama-tests.$$
	mkdir -m 1777 "$shmdir" && export NPUSHM_SHM_DIR="$shmdir"
fi

echo "# Llama engine tests, backend $NPUSHM_BACKEND"
part pytorch "$root/tools/run-pytest.sh" "$here/test_llama.py"
part api "$root/tools/run-pytest.sh" "$here/test_api.py"

if [ -z "$shmdir" ] || [ -z "$(ls -A "$shmdir")" ]; then
	result 0 "nothing left behind in the shared-memory directory"
else
	result 1 "nothing left behind in the shared-memory directory: $(ls -A "$shmdir")"
fi
tap_end
