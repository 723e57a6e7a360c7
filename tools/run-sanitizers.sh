#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-sanitizers.sh - suite "sanitizers": the libraries' own C tests built
# again with AddressSanitizer and UndefinedBehaviorSanitizer, as one TAP
# stream. A sanitizer report aborts the process it happens in, so it fails
# the test (or the part) that triggered it.
#
#   run-sanitizers.sh MAKE SAN_BUILD "SAN_CC"
#
# Parts: libnpushm's C tests (posix backend), the tensor C tests (and the
# model building blocks'), ccl's unit tests and the BERT engine's C API tests. ccl's multi-rank tests are not run here: they fork ranks from
# a process whose bootstrap thread is running, and the sanitizer runtime's
# allocator lock is not fork-safe (a child can start with it held).
# Then libnpushm's region tests and ccl's unit tests again with
# ThreadSanitizer (TSAN_CC, in SAN_BUILD/tsan): npushm.h lets threads share
# handles and open devices at once, npccl.h make communicators from any
# thread, and a data race fails the test it happens in.
MAKE=${1:?usage: run-sanitizers.sh MAKE SAN_BUILD SAN_CC TSAN_CC}
SAN_BUILD=${2:?}
SAN_CC=${3:?}
TSAN_CC=${4:?}
root=$(cd "$(dirname "$0")/.." && pwd)
log=$SAN_BUILD.build.log

mkdir -p "$SAN_BUILD"
# the kselftest harness the main build extracted (tools/setup.sh)
[ -e "$SAN_BUILD/linux-source" ] || ln -s ../linux-source "$SAN_BUILD/linux-source"
echo "# building with: $SAN_CC -O1 -g (log: $log)"
if ! $MAKE -C "$root" --no-print-directory -j2 BUILD="$SAN_BUILD" CC="$SAN_CC" CFLAGS="-O1 -g" \
	$(cd "$root/libnpushm/tests" && for f in test_*.c; do
		w=${f#test_}; echo "$SAN_BUILD/tests/libnpushm-$(echo "${w%.c}" | tr _ -)-test"; done) \
	"$SAN_BUILD/tests/tensor-test" \
	"$SAN_BUILD/tests/tensor-blocks-test" "$SAN_BUILD/tests/ccl-unit-test" \
	"$SAN_BUILD/tests/bert-test" "$SAN_BUILD/tools/npushm-bert-gen" >"$log" 2>&1; then
	. "$root/tools/tap.sh"
	result 1 "build the C tests with ASan and UBSan" "$log"
	tap_end
	exit 1
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
. "$root/tools/tap.sh"
TAP_PART_HINT="sanitizer report above?"

for t in "$SAN_BUILD"/tests/libnpushm-*-test; do
	part libnpushm env NPUSHM_BACKEND=posix "$t"
done
part tensor "$SAN_BUILD/tests/tensor-test"
part tensor-blocks "$SAN_BUILD/tests/tensor-blocks-test"
part ccl-unit "$SAN_BUILD/tests/ccl-unit-test"
# the BERT engine's C API tests on small generated models, in a private tmpfs directory
models=$SAN_BUILD/bert-test
"$root/apps/bert/tests/make-models.sh" "$SAN_BUILD/tools/npushm-bert-gen" "$models" || exit 1
shm=/dev/shm/npushm-san-bert.$$
mkdir -m 0700 "$shm"
part bert env NPUSHM_BACKEND=posix NPUSHM_SHM_DIR="$shm" BERT_TEST_DIR="$models" "$SAN_BUILD/tests/bert-test"
rm -rf "$shm"

tsan=$SAN_BUILD/tsan
mkdir -p "$tsan"
[ -e "$tsan/linux-source" ] || ln -s ../../linux-source "$tsan/linux-source"
if $MAKE -C "$root" --no-print-directory -j2 BUILD="$tsan" CC="$TSAN_CC" CFLAGS="-O1 -g" \
	"$tsan/tests/libnpushm-region-test" "$tsan/tests/ccl-unit-test" >"$tsan.build.log" 2>&1; then
	shm=/dev/shm/npushm-san-tsan.$$
	mkdir -m 0700 "$shm"
	part libnpushm-tsan env TSAN_OPTIONS=halt_on_error=1 NPUSHM_BACKEND=posix NPUSHM_SHM_DIR="$shm" \
		"$tsan/tests/libnpushm-region-test"
	part ccl-unit-tsan env TSAN_OPTIONS=halt_on_error=1 NPUSHM_BACKEND=posix NPUSHM_SHM_DIR="$shm" \
		"$tsan/tests/ccl-unit-test"
	rm -rf "$shm"
else
	result 1 "build libnpushm's region tests and ccl's unit tests with ThreadSanitizer" \
		"$tsan.build.log"
fi
tap_end
