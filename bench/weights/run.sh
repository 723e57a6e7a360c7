#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run.sh - run the shared-weights benchmark and print its tables (Markdown).
#
#   bench/weights/run.sh [ARGS...]          posix backend, natively
#   bench/weights/run.sh --kmod [ARGS...]   kmod backend, in the test VM with the
#                                           module (pool 1 GiB, no quota, 6 GiB guest)
# ARGS go to npushm-bench-weights (--size MiB, --max-workers N, --quick).
# Builds nothing: run `make` first. Prints the machine's load before and after,
# since the machine is shared; results go in bench/results/weights.md. The model
# file is written to $TMPDIR (default /tmp; its page cache is warmed first).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$root/build}
cd "$root"
if [ "${1:-}" = --kmod ]; then
	shift
	out=$BUILD/vm/bench-weights
	mkdir -p "$out"
	rm -f "$out/weights.md"
	echo "# host load before the VM run: $(cut -d' ' -f1-3 /proc/loadavg)"
	VM_QUIET=1 selftests/vm/run-vm.sh -m 6G -t 1800 -o "$out" -- \
		env NPUSHM_TEST_PARAMS="capacity=1G uid_quota=0" selftests/vm/with-module.sh \
		sh -c "NPUSHM_BACKEND=kmod bench/weights/run.sh $* > '$out/weights.md' 2>&1" || rc=$?
	cat "$out/weights.md"
	echo "# host load after the VM run: $(cut -d' ' -f1-3 /proc/loadavg)"
	exit "${rc:-0}"
fi
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -r), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB"
echo "# load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# command: NPUSHM_BACKEND=${NPUSHM_BACKEND:-posix} bench/weights/run.sh $*"
NPUSHM_BACKEND=${NPUSHM_BACKEND:-posix} "$BUILD/bench/npushm-bench-weights" --dir "${TMPDIR:-/tmp}" "$@"
echo
echo "# load after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
