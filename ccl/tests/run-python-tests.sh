#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-python-tests.sh - the "ccl-python" suite: pytest on ccl/tests/python (npushm.ccl with
# NumPy, DLPack and buffers; the torch.distributed backend npushm.ccl_torch against gloo),
# as one TAP stream for tools/run-suite. The torch extension is built by make before this
# runs (make check-ccl-python); a missing extension or package fails here, it is never skipped.
# NPCCL_PY_FULL=1 (make check-ccl-python-full): every dtype at every size.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PY=/usr/bin/python3
out=$(mktemp -d /tmp/ccl-python.XXXXXX)
trap 'rm -rf "$out"' EXIT
cd "$root" || exit 1
export PYTHONPATH="$root/python"
export NPUSHM_TAP_OUT="$out/tap"
t0=$(date +%s)
timeout -k 10 1200 "$PY" -m pytest -q -p no:cacheprovider "$here/python" >"$out/log" 2>&1
rc=$?
sed 's/^/# /' "$out/log" | tail -40
echo "# pytest exit status $rc after $(($(date +%s) - t0)) s"
. "$root/tools/tap.sh"
if [ -s "$out/tap" ]; then
	tap_fold "" "$rc" "" <"$out/tap"
else
	result 1 "pytest ran no test (exit status $rc)"
fi
tap_end && [ "$rc" = 0 ]
