#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-module-tests.sh - inside the test VM (as root): load npushm.ko with the
# test parameters and the selftests' importer npushm_test.ko, run every
# module selftest (each mounts its own instance of the filesystem), then
# module-reload-test (unloads and reloads npushm.ko), check the kernel untainted,
# unload both modules. Prints one TAP stream (tools/tap.sh: each program's
# results folded in, prefixed with its name); exits non-zero on any failure.
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
. "$here/tools/tap.sh"

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
	log=$(mktemp)
	fault-loop modinit "$ko" "$params" > "$log" 2>&1
	result $? "fault-loop modinit: module init and exit through every injection point" "$log"
	rm -f "$log"
fi
# shellcheck disable=SC2086
if ! insmod "$ko" $params; then
	result 1 "insmod $ko $params"; tap_end; exit 1
fi
[ -c /dev/npushm ] || { result 1 "/dev/npushm appeared"; rmmod npushm; tap_end; exit 1; }
if ! insmod "$testko"; then
	result 1 "insmod $testko"; rmmod npushm; tap_end; exit 1
fi

# Soft-RoCE for the RDMA test: one rxe device over a veth pair.
if modprobe rdma_rxe 2>/dev/null &&
   ip link add npushm-rxe0 type veth peer name npushm-rxe1 &&
   ip addr add 198.18.0.1/24 dev npushm-rxe0 &&
   ip link set npushm-rxe0 up && ip link set npushm-rxe1 up &&
   rdma link add npushm_rxe0 type rxe netdev npushm-rxe0; then
	export NPUSHM_RDMA_DEV=npushm_rxe0
	rxe=0
else
	rxe=1
fi

if [ -n "${NPUSHM_FAULT_INJECT:-}" ]; then
	tests=${NPUSHM_SELFTESTS:-$BUILD/tests/module-faults-test}
else
	# every build/tests/module-*-test but the two that run on their own
	tests=${NPUSHM_SELFTESTS:-}
	if [ -z "$tests" ]; then
		for t in "$BUILD"/tests/module-*-test; do
			case ${t##*/} in module-reload-test|module-faults-test) ;; *) tests="$tests $t" ;; esac
		done
	fi
fi
TAP_PART_TIMES=1
for t in $tests; do
	part "${t##*/}" "$t"
done
if [ -z "${NPUSHM_FAULT_INJECT:-}" ] && [ -z "${NPUSHM_SELFTESTS:-}" ]; then
	providers=
	[ -n "${NPUSHM_TEST_BAR:-}" ] && providers="bar:${NPUSHM_TEST_BAR%@*}"
	for node_dir in /sys/devices/system/node/node[0-9]*; do
		[ -n "$(tr -d '\n' < "$node_dir/cpulist")" ] && continue
		providers="$providers node:${node_dir##*node}"
	done
	for provider in $providers; do
		for t in map dmabuf pins rdma; do
			part "module-$t-test on $provider" env NPUSHM_TEST_MOUNT_OPTS="provider=$provider" \
				"$BUILD/tests/module-$t-test"
		done
	done
	part module-reload-test "$BUILD/tests/module-reload-test"
fi

# Epilogue: the machine after the programs.
[ -n "${NPUSHM_RDMA_DEV:-}" ] && { rdma link delete npushm_rxe0; ip link del npushm-rxe0; } 2>/dev/null
result $rxe "soft-RoCE device (rdma_rxe over a veth) for the RDMA test"
taint=$(cat /proc/sys/kernel/tainted)
if [ -n "${NPUSHM_FAULT_INJECT:-}" ]; then
	# W (512) included: an injected failure in the kernel's own module loader
	# WARNs (jump labels); the lane's detectors (selftests/debug/check-logs.sh)
	# tell those from any other WARNING.
	[ $((taint & ~(12288 | 512))) = 0 ]
	result $? "kernel not tainted beyond the out-of-tree module and the loader's WARNs under injection ($taint)"
else
	[ $((taint & ~12288)) = 0 ]
	result $? "kernel not tainted beyond the out-of-tree module ($taint)"
fi
rmmod npushm_test
result $? "rmmod npushm_test"
rmmod npushm
result $? "rmmod npushm"
[ ! -e /dev/npushm ]
result $? "/dev/npushm gone"
tap_end
