#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-tests.sh - the BERT engine's test suite as one TAP stream: the C API
# tests (build/tests/bert-test, kselftest harness) and the tests against the
# PyTorch reference and of every refusal (test_bert.py, pytest), renumbered
# into one plan, then a check that nothing was left behind.
#
#   NPUSHM_BACKEND=posix|kmod run-tests.sh
#
# Backend posix (default): everything happens in a private tmpfs directory
# (NPUSHM_SHM_DIR) removed afterwards, sticky and writable by all as /dev/shm
# is: a test publishes as another uid. Backend kmod: run where /dev/npushm
# exists; run-kmod-vm.sh runs the engine part of it in the VM.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
BUILD=${BUILD:-$root/build}
NPUSHM_BACKEND=${NPUSHM_BACKEND:-posix}
PY=/usr/bin/python3
export BUILD NPUSHM_BACKEND
cd "$root" || exit 1

. "$root/tools/tap.sh"
TAP_PART_TIMES=1
shmdir=
cleanup() { [ -n "$shmdir" ] && rm -rf "$shmdir"; }
trap cleanup EXIT
if [ "$NPUSHM_BACKEND" = posix ]; then
	shmdir=/dev/shm/npbert-tests.$$
	mkdir -m 1777 "$shmdir" && export NPUSHM_SHM_DIR="$shmdir"
fi

# the C tests' models
models=$BUILD/bert-test
"$here/make-models.sh" "$BUILD/tools/npushm-bert-gen" "$models" || exit 1

echo "# BERT engine tests, backend $NPUSHM_BACKEND"
part c env BERT_TEST_DIR="$models" "$BUILD/tests/bert-test"
part pytorch "$root/tools/run-pytest.sh" "$here/test_bert.py"

if [ -z "$shmdir" ] || [ -z "$(ls -A "$shmdir")" ]; then
	result 0 "nothing left behind in the shared-memory directory"
else
	result 1 "nothing left behind in the shared-memory directory: $(ls -A "$shmdir")"
fi
tap_end
