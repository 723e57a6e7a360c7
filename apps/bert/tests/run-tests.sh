#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-tests.sh - the BERT engine's test suite as one TAP stream: the C API
# tests (build/bin/npbert-test, kselftest harness) and the tests against the
# PyTorch reference and of every refusal (test_bert.py, pytest), renumbered
# into one plan, then a check that nothing was left behind.
#
#   NPUSHM_BACKEND=posix|kmod run-tests.sh
#
# Backend posix (default): everything happens in a private tmpfs directory
# (NPUSHM_SHM_DIR) removed afterwards. Backend kmod: run where /dev/npushm
# exists; run-kmod-vm.sh runs the engine part of it in the VM.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
BUILD=${BUILD:-$root/build}
NPUSHM_BACKEND=${NPUSHM_BACKEND:-posix}
PY=/usr/bin/python3
export BUILD NPUSHM_BACKEND
cd "$root" || exit 1

count=0
failed=0
state=$(mktemp)
out=$(mktemp)
shmdir=
cleanup() { rm -f "$state" "$out"; [ -n "$shmdir" ] && rm -rf "$shmdir"; }
trap cleanup EXIT
if [ "$NPUSHM_BACKEND" = posix ]; then
	shmdir=/dev/shm/npbert-tests.$$
	mkdir -m 0700 "$shmdir" && export NPUSHM_SHM_DIR="$shmdir"
fi

part() {
	name=$1
	shift
	t0=$(date +%s)
	"$@" > "$out" 2>&1
	rc=$?
	echo "# part $name: $(($(date +%s) - t0)) s"
	"$root/tools/tap-part" "$count" "$name" "$rc" "$state" < "$out"
	set -- $(cat "$state")
	count=$((count + $1))
	failed=$((failed + $2))
}

# the C tests' models
models=$BUILD/bert-test
mkdir -p "$models"
gen=$BUILD/bin/npushm-bert-gen
[ -f "$models/tiny.safetensors" ] ||
	$gen --layers 2 --hidden 64 --heads 4 --ffn 256 --vocab 100 --positions 32 "$models/tiny.safetensors"
[ -f "$models/nopool.safetensors" ] ||
	$gen --layers 2 --hidden 64 --heads 4 --ffn 256 --vocab 100 --positions 32 --no-pooler \
		"$models/nopool.safetensors"
[ -f "$models/big.safetensors" ] ||
	$gen --layers 2 --hidden 512 --heads 8 --ffn 2048 --vocab 100 --positions 32 "$models/big.safetensors"

echo "# BERT engine tests, backend $NPUSHM_BACKEND"
part c env BERT_TEST_DIR="$models" "$BUILD/bin/npbert-test"
part pytorch "$PY" -m pytest -p no:terminal -p no:cacheprovider "$here/test_bert.py"

count=$((count + 1))
if [ -z "$shmdir" ] || [ -z "$(ls -A "$shmdir")" ]; then
	echo "ok $count - nothing left behind in the shared-memory directory"
else
	echo "not ok $count - left behind: $(ls -A "$shmdir")"
	failed=$((failed + 1))
fi
echo "1..$count"
[ "$failed" = 0 ]
