#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# netns-test.sh - the "ccl-netns" suite: 2 to 4 "hosts" as network
# namespaces joined through a bridge (in its own namespace) by veth pairs,
# addressed from 198.18.0.0/15, ranks in each, started with launcher-style
# environment variables. Checks every collective (and the hierarchical
# AllReduce) across hosts, deterministic reductions under two placements,
# and that killing a rank on one host makes every
# rank on the other hosts fail naming it. Everything it creates carries a
# per-run prefix and is removed on exit. Needs root (skips otherwise).
root=$(cd "$(dirname "$0")/../.." && pwd)
TESTS=${BUILD:-$root/build}/tests
. "$root/tools/tap.sh"

if [ "$(id -u)" != 0 ]; then
	tap_skip "network-namespace tests" "need root to create network namespaces"
	tap_end
	exit 0
fi
if ! command -v ip >/dev/null; then
	tap_skip "network-namespace tests" "iproute2 (ip) not installed"
	tap_end
	exit 0
fi

P=npc$$
out=$(mktemp -d /tmp/ccl-netns.XXXXXX)
NS=""
cleanup() {
	for ns in $NS; do ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null; done
	for ns in $NS; do ip netns del "$ns" 2>/dev/null; done
	rm -rf "$out"
}
trap cleanup EXIT INT TERM

# switch namespace with a bridge; hosts h1..h4 at 198.18.0.1..4
ip netns add "${P}sw" || { result 1 "cannot create network namespaces"; tap_end; exit 1; }
NS="${P}sw"
ip -n "${P}sw" link add br0 type bridge
ip -n "${P}sw" link set br0 up
for h in 1 2 3 4; do
	ns=${P}h$h
	ip netns add "$ns" && NS="$NS $ns"
	ip link add "${P}h${h}a" type veth peer name "${P}h${h}b"
	ip link set "${P}h${h}a" netns "$ns"
	ip link set "${P}h${h}b" netns "${P}sw"
	ip -n "${P}sw" link set "${P}h${h}b" master br0 up
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add "198.18.0.$h/24" dev "${P}h${h}a"
	ip -n "$ns" link set "${P}h${h}a" up
done
# wait until every link is up (connections retry anyway)
for h in 1 2 3 4; do
	i=0
	until ip -n "${P}h$h" link show "${P}h${h}a" 2>/dev/null | grep -q "state UP" || [ $i -ge 25 ]; do
		i=$((i + 1)); sleep 0.2
	done
done
result 0 "created 4 network namespaces joined by veth pairs through a bridge (198.18.0.1-4)"

port=$((30000 + $$ % 20000))
# launch_ranks NAME TIMEOUT "h1 h1 h2 ..." CMD...: one rank per word, in that
# host, output in $out/NAME.RANK; sets world, and good=1 if every rank exited 0
launch_ranks() {
	lname=$1 ltmo=$2 llayout=$3
	shift 3
	port=$((port + 1))
	world=$(echo $llayout | wc -w)
	r=0 pids=""
	for h in $llayout; do
		RANK=$r WORLD_SIZE=$world MASTER_ADDR=198.18.0.1 MASTER_PORT=$port \
			NPCCL_TIMEOUT_MS=20000 timeout -k 5 "$ltmo" \
			ip netns exec "${P}h$h" "$@" >"$out/$lname.$r" 2>&1 &
		pids="$pids $!"
		r=$((r + 1))
	done
	good=1
	for p in $pids; do wait "$p" || good=0; done
}
# run_job NAME EXPECT_HOSTS "h1 h1 h2 h2 ...": every collective checked
run_job() {
	name=$1 hosts=$2 layout=$3
	launch_ranks "$name" 120 "$layout" "$TESTS/ccl-test" env-worker
	nok=$(cat "$out/$name".* | grep -c "^envcheck rank .* hosts $hosts ok")
	if [ $good = 1 ] && [ "$nok" = "$world" ]; then
		result 0 "$name: $world ranks on $hosts hosts, every collective correct ($(grep -h 'predicted' "$out/$name".* | sed 's/.*| //' | cut -c1-110))"
	else
		result 1 "$name: $world ranks on $hosts hosts ($nok ok)"
		cat "$out/$name".* | sed 's/^/# /' | tail -12
	fi
}

run_job "2 hosts x 1 rank (TCP only)" 2 "1 2"
run_job "2 hosts x 2 ranks (shm + TCP, hierarchical)" 2 "1 1 2 2"
run_job "3 hosts x 2 ranks, interleaved rank order" 3 "1 2 3 1 2 3"
run_job "4 hosts x 2 ranks (8 ranks on 2 cores)" 4 "1 1 2 2 3 3 4 4"
run_job "2 hosts with 1 and 2 ranks (non-uniform)" 2 "1 2 2"

# deterministic reductions: the same bits (the canonical-order reference) whatever the
# placement of the ranks on hosts (hierarchical, interleaved)
det_job() {
	name=$1 layout=$2
	launch_ranks "$name" 180 "$layout" env NPCCL_DETERMINISTIC=1 "$TESTS/ccl-det-test" env
	nok=$(cat "$out/$name".* | grep -c "^detcheck rank .* ok")
	if [ $good = 1 ] && [ "$nok" = "$world" ]; then
		result 0 "deterministic $name: every rank's AllReduce/ReduceScatter/Reduce bits equal the rank-order reference ($(sed 's/.*ok: //' "$out/$name.0" | cut -c1-100))"
	else
		result 1 "deterministic $name ($nok of $world ranks ok)"
		cat "$out/$name".* | sed 's/^/# /' | tail -8
	fi
}
det_job "2 hosts x 2 ranks" "1 1 2 2"
det_job "3 hosts x 2 ranks interleaved" "1 2 3 1 2 3"

# kill -9 a rank on host 2 while 4 ranks on 2 hosts run AllReduce
port=$((port + 1))
r=0 pids=""
for h in 1 1 2 2; do
	RANK=$r WORLD_SIZE=4 MASTER_ADDR=198.18.0.1 MASTER_PORT=$port NPCCL_TIMEOUT_MS=5000 \
		timeout -k 5 60 ip netns exec "${P}h$h" "$TESTS/ccl-test" env-loop >"$out/kill.$r" 2>&1 &
	eval "pid$r=$!"
	r=$((r + 1))
done
i=0
until [ "$(cat "$out"/kill.* 2>/dev/null | grep -c running)" = 4 ] || [ $i -ge 100 ]; do
	i=$((i + 1)); sleep 0.1
done
sleep 0.3
victim=$(ip netns pids "${P}h2" | while read -r p; do
	[ "$(tr '\0' ' ' </proc/$p/cmdline 2>/dev/null | grep -c env-loop)" = 1 ] && \
		grep -qx 'RANK=3' /proc/$p/environ 2>/dev/null && tr '\0' '\n' </proc/$p/environ | grep -qx 'RANK=3' && echo "$p"
done | head -1)
[ -n "$victim" ] && kill -9 "$victim"
wait $pid0; wait $pid1; wait $pid2
named=0
for r in 0 1 2; do grep -q "status .*: .*rank 3" "$out/kill.$r" && named=$((named + 1)); done
if [ -n "$victim" ] && [ $named = 3 ]; then
	result 0 "kill -9 of rank 3 on host 2: every survivor on both hosts fails naming rank 3"
	sed 's/^/# /' "$out/kill.0" | tail -1 | cut -c1-250
else
	result 1 "kill -9 of rank 3 on host 2 (victim pid '${victim}', $named of 3 survivors named it)"
	cat "$out"/kill.* | sed 's/^/# /' | tail -12
fi
wait 2>/dev/null

cleanup
trap - EXIT
left=$(ip netns list | grep -c "^$P")
[ "$left" = 0 ] && result 0 "namespaces and veth pairs removed" || result 1 "$left namespaces left behind"
tap_end
