#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# standin-tests.sh - the debug lane's own smoke test: a small suite that
# needs no npushm selftest (veth, netns, soft-RoCE, memfds and the
# fault-injection machinery on plain syscalls), TAP through tools/tap.sh:
#   make check-debug DEBUG_SUITE=selftests/debug/standin-tests.sh \
#        DEBUG_FAULT_SUITE='selftests/debug/standin-tests.sh --fault'
#
#   standin-tests.sh           insmod $NPUSHM_KO $NPUSHM_TEST_PARAMS (when set), a
#                              veth pair into a netns, soft-RoCE on it, memfds; rmmod
#   standin-tests.sh --fault   the fault-injection machinery on ordinary syscalls
#                              and, with $NPUSHM_KO, on its module init/exit
# Needs the debug-kernel VM (root, debugfs); fault-loop comes from the lane's PATH.
set -u
here=$(cd "$(dirname "$0")" && pwd)
fi=$here/fail-inject.sh
ko=${NPUSHM_KO:-}
mod=$(basename "${ko:-none}" .ko | tr - _)
. "$here/../../tools/tap.sh"
ok() { result 0 "$*"; }
notok() { result 1 "$*"; }
check() { # check DESCRIPTION COMMAND...: one result from a command's status
	d=$1; shift
	o=$("$@" 2>&1); r=$?
	[ -n "$o" ] && printf '%s\n' "$o" | sed 's/^/# /'
	if [ "$r" = 0 ]; then ok "$d"; else notok "$d (exit $r)"; fi
}

if [ "${1:-}" = --fault ]; then
	# 1. fail-nth loops: every injected failure gives a clean errno.
	o=$("$fi" --slab --page --arm -- fault-loop syscalls 2>&1); r=$?
	printf '%s\n' "$o" | sed 's/^/    /'
	if [ "$r" = 0 ]; then ok "fail-nth loops over memfd_create and open"; else notok "fail-nth loops over memfd_create and open"; fi

	# 2. probability mode fails the targeted task only. One shell, targeted,
	# counts memfd failures first untargeted (make-it-fail cleared), then
	# targeted again. --space lets the exec and start-up (well under 1 MB of
	# slab objects) through; then the next 20 targeted allocations fail (no
	# more: unlimited failures in a task that reads the 9p root can break the
	# guest's 9p mount for every later process).
	# shellcheck disable=SC2016
	res=$("$fi" --slab --probability 100 --times 20 --space 1000000 -- sh -c \
		'echo 0 > /proc/self/make-it-fail && u=$(fault-loop count 2000) &&
		 echo 1 > /proc/self/make-it-fail && t=$(fault-loop count 2000) && echo "untargeted: $u; targeted: $t"' 2>&1)
	echo "# $res"
	case "$res" in
	*"untargeted: memfd_create: 2000 calls, 0 failed"*"targeted: memfd_create: 2000 calls, "[1-9]*)
		ok "probability mode: failures in the targeted task only" ;;
	*) notok "probability mode: failures in the targeted task only" ;;
	esac

	# 3. nth mode: the 1st injection point of the exec fails, a far one does not.
	if ! "$fi" --slab --nth 1 -- /bin/true 2>/dev/null && "$fi" --slab --nth 1000000 -- /bin/true 2>/dev/null; then
		ok "nth mode: exec fails at the 1st injection point, not at the 1000000th"
	else
		notok "nth mode: exec fails at the 1st injection point, not at the 1000000th"
	fi

	# 4. the module's init and exit through every injection point.
	if [ -n "$ko" ]; then
		o=$("$fi" --slab --page --arm -- fault-loop modinit "$ko" "${NPUSHM_TEST_PARAMS:-}" 2>&1); r=$?
		printf '%s\n' "$o" | sed 's/^/    /'
		if [ "$r" = 0 ]; then ok "module init through every injection point ($mod)"; else notok "module init through every injection point ($mod)"; fi
	else
		tap_skip "module init through every injection point" "NPUSHM_KO not set"
	fi
	tap_end
	exit
fi

if [ -n "$ko" ]; then
	# shellcheck disable=SC2086
	check "insmod $mod ${NPUSHM_TEST_PARAMS:-}" insmod "$ko" ${NPUSHM_TEST_PARAMS:-}
else
	tap_skip "insmod" "NPUSHM_KO not set"
fi

ns=dbglane$$
check "veth pair into a network namespace, ping across" sh -c "
	ip netns add $ns && ip link add dbg0 type veth peer name dbg1 netns $ns &&
	ip addr add 198.18.0.1/24 dev dbg0 && ip link set dbg0 up &&
	ip -n $ns addr add 198.18.0.2/24 dev dbg1 && ip -n $ns link set dbg1 up && ip -n $ns link set lo up &&
	busybox ping -c 2 -W 5 198.18.0.2 >/dev/null"
check "soft-RoCE (rdma_rxe) on the veth, then removed" sh -c "
	rdma link add dbgrxe0 type rxe netdev dbg0 && rdma link show | grep -q dbgrxe0 &&
	{ ! command -v ibv_devices >/dev/null || ibv_devices | grep -q dbgrxe0; } && rdma link delete dbgrxe0"
ip link del dbg0 2>/dev/null
ip netns del "$ns" 2>/dev/null

o=$(fault-loop count 200 2>&1)
echo "# $o"
case "$o" in *"200 calls, 0 failed"*) ok "memfd_create x200" ;; *) notok "memfd_create x200" ;; esac

if [ -n "$ko" ]; then
	check "rmmod $mod" rmmod "$mod"
else
	tap_skip "rmmod" "NPUSHM_KO not set"
fi
tap_end
