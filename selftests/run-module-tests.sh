#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-module-tests.sh - inside the test VM (as root): load npushm.ko with the
# test parameters and the selftests' importer npushm_test.ko, run every
# module selftest (each mounts its own instance of the filesystem), then
# module-reload-test (unloads and reloads npushm.ko), check the kernel untainted,
# unload both modules. Prints TAP; exits non-zero on any failure.
#
# Environment: BUILD (build directory), NPUSHM_KO (the module to load,
# default kmod/npushm.ko; the importer is test/npushm_test.ko next to it),
# NPUSHM_TEST_PARAMS (module parameters), NPUSHM_SELFTESTS (a subset of test
# programs to run; no reload then), NPUSHM_FAULT_INJECT (set by the debug
# lane's fault pass: run the fault-injection loops instead), NPUSHM_TEST_BAR
# (ADDR@BAR: a PCI BAR the module serves as a provider, bars= at load; the
# VM's ivshmem device).
#
# After the whole suite on system memory, the programs that exercise what a
# provider must give (mapping, dma-buf, pins, RDMA) run again on an instance
# of each other provider the VM has: the BAR, and the memory-only node.
here=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$here/build}
params=${NPUSHM_TEST_PARAMS:-capacity=512M uid_quota=256M}
# Not under the fault pass: its loops load the module with these parameters.
[ -n "${NPUSHM_TEST_BAR:-}" ] && [ -z "${NPUSHM_FAULT_INJECT:-}" ] && params="$params bars=$NPUSHM_TEST_BAR"
export NPUSHM_TEST_PARAMS="$params"
fail=0
n=0
tap() {	# tap ok|not-ok description
	n=$((n + 1))
	if [ "$1" = ok ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi
}

if [ "$(id -u)" != 0 ] || [ -z "${NPUSHM_IN_VM:-}" ]; then
	echo "run-module-tests: run me inside the test VM: selftests/vm/run-vm.sh -- $0" >&2
	exit 2
fi

ko=${NPUSHM_KO:-$here/kmod/npushm.ko}
testko=$(dirname "$ko")/test/npushm_test.ko
export NPUSHM_KO="$ko"
if [ -n "${NPUSHM_FAULT_INJECT:-}" ]; then
	# The debug lane's fault-injection pass: module init and exit through
	# every injection point, then every entry point (module-faults-test).
	echo "# ==== fault-loop modinit"
	fault-loop modinit "$ko" "$params" || fail=1
fi
# shellcheck disable=SC2086
if ! insmod "$ko" $params; then
	echo "1..1"; tap not-ok "insmod $ko $params"; exit 1
fi
[ -c /dev/npushm ] || { echo "1..1"; tap not-ok "/dev/npushm appeared"; rmmod npushm; exit 1; }
if ! insmod "$testko"; then
	echo "1..1"; tap not-ok "insmod $testko"; rmmod npushm; exit 1
fi

# Soft-RoCE for the RDMA test: one rxe device over a veth pair.
if modprobe rdma_rxe 2>/dev/null &&
   ip link add npushm-rxe0 type veth peer name npushm-rxe1 &&
   ip addr add 198.18.0.1/24 dev npushm-rxe0 &&
   ip link set npushm-rxe0 up && ip link set npushm-rxe1 up &&
   rdma link add npushm_rxe0 type rxe netdev npushm-rxe0; then
	export NPUSHM_RDMA_DEV=npushm_rxe0
	rxe=ok
else
	rxe=not-ok
fi

if [ -n "${NPUSHM_FAULT_INJECT:-}" ]; then
	tests=${NPUSHM_SELFTESTS:-$BUILD/tests/module-faults-test}
else
	# every build/tests/module-*-test but the two that run on their own
	tests=${NPUSHM_SELFTESTS:-$(ls "$BUILD"/tests/module-*-test | grep -v -e '/module-reload-test$' -e '/module-faults-test$')}
fi
for t in $tests; do
	echo "# ==== $(basename "$t")"
	"$t" || fail=1
done
if [ -z "${NPUSHM_FAULT_INJECT:-}" ] && [ -z "${NPUSHM_SELFTESTS:-}" ]; then
	providers=
	[ -n "${NPUSHM_TEST_BAR:-}" ] && providers="bar:${NPUSHM_TEST_BAR%@*}"
	for n in /sys/devices/system/node/node[0-9]*; do
		[ -s "$n/cpulist" ] && [ -n "$(tr -d '\n' < "$n/cpulist")" ] && continue
		providers="$providers node:${n##*node}"
	done
	for p in $providers; do
		for t in map dmabuf pins rdma; do
			echo "# ==== module-$t-test on provider=$p"
			NPUSHM_TEST_MOUNT_OPTS="provider=$p" "$BUILD/tests/module-$t-test" || fail=1
		done
	done
	echo "# ==== module-reload-test"
	"$BUILD/tests/module-reload-test" || fail=1
fi

# Epilogue: more TAP lines, after the programs' own plans.
echo "1..5"
n=0
[ -n "${NPUSHM_RDMA_DEV:-}" ] && { rdma link delete npushm_rxe0; ip link del npushm-rxe0; } 2>/dev/null
tap $rxe "soft-RoCE device (rdma_rxe over a veth) for the RDMA test"
taint=$(cat /proc/sys/kernel/tainted)
if [ $((taint & ~12288)) = 0 ]; then tap ok "kernel not tainted beyond the out-of-tree module ($taint)"
else tap not-ok "kernel tainted: $taint"; fi
if rmmod npushm_test; then tap ok "rmmod npushm_test"; else tap not-ok "rmmod npushm_test"; fi
if rmmod npushm; then tap ok "rmmod npushm"; else tap not-ok "rmmod npushm"; fi
if [ ! -e /dev/npushm ]; then tap ok "/dev/npushm gone"; else tap not-ok "/dev/npushm gone"; fi
exit $fail
