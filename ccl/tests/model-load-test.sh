#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# model-load-test.sh - the cluster model load (npccl_model_load) on this
# machine: three ranks that are three "hosts" to npccl (NPCCL_DISABLE_SHM=1:
# TCP between them), each with its own POSIX shared-memory directory, so
# every host's names are its own. The same cases run over RDMA between
# soft-RoCE hosts in the test VM (rdma/rdma-guest.sh). TAP on stdout.
root=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$root/build}
export BUILD
BIN=$BUILD/bin
ML_OUT=$(mktemp -d /tmp/ccl-model-load.XXXXXX)
shm=$(mktemp -d /dev/shm/ccl-model-load.XXXXXX)
trap 'rm -rf "$ML_OUT" "$shm"' EXIT
ML_ADDR=127.0.0.1
ML_PORT=$((21000 + $$ % 20000))
. "$root/tools/tap.sh"
ml_exec() {
	_h=$1
	shift
	mkdir -p "$shm/h$_h"
	NPUSHM_BACKEND=posix NPUSHM_SHM_DIR=$shm/h$_h NPCCL_DISABLE_SHM=1 "$@"
}
. "$root/ccl/tests/model-load-lib.sh"
ml_tests "1 2 3"

# usage errors say what was wrong and exit 2 before joining any communicator
usage_ok=1
for args in "--root x m" "--mode 0777 m" "--mode 0200 m" "--mode 0 m" "--bogus m" "" "a b c"; do
	# shellcheck disable=SC2086
	"$BIN/npccl-load" $args >"$ML_OUT/usage.out" 2>"$ML_OUT/usage.err"
	rc=$?
	{ [ "$rc" = 2 ] && [ ! -s "$ML_OUT/usage.out" ] && grep -q "^npccl-load: " "$ML_OUT/usage.err" &&
		grep -q "^usage: npccl-load" "$ML_OUT/usage.err"; } ||
		{ usage_ok=0; echo "# npccl-load $args: exit $rc: $(head -1 "$ML_OUT/usage.err")"; }
done
if [ "$usage_ok" = 1 ]; then
	result 0 "npccl-load usage errors (bad --root, --mode above 0666 or without a read bit, unknown option, no NAME, extra argument) name the problem and exit 2"
else
	result 1 "npccl-load usage errors"
fi
tap_end
