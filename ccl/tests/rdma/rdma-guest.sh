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
#  4. one model load for the cluster, and a rank killed mid-broadcast;
#  5. single copy without ptrace (npushm spaces): other uids, Yama scope 3
#     and seccomp; the path taken, every collective, unmap/exit races.
# One TAP stream; every part under `timeout`.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
BUILD=${BUILD:-$root/build}
# the test programs and the installed programs (npccl-load, npushm)
TESTS=$BUILD/tests BIN=$BUILD/bin
out=$(mktemp -d /tmp/rdma-tests.XXXXXX)
. "$root/tools/tap.sh"
. "$here/topology.sh"
cleanup() {
	topo_down
	for _m in "$out"/npushm-h*; do umount "$_m" 2>/dev/null; done
	rm -rf "$out"
}
trap cleanup EXIT INT TERM

# seconds since boot (the clock the guest keeps best under emulation)
up() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(up)" 'BEGIN { printf "%.1f", b - a }'; }
TAP_PART_TIMES=1

t0=$(up)
if topo_up 4; then
	result 0 "4 soft-RoCE hosts: network namespaces for TCP, rxe devices on veths through a bridge ($(since "$t0") s)"
else
	result 1 "soft-RoCE hosts could not be created"
	tap_end
	exit 1
fi

part_within reg 60 env NPUSHM_RDMA_DEV="$TOPO_DEV_1" "$TESTS/libnpushm-rdma-reg-test"

# ---- ranks in the hosts' namespaces, launched with torchrun-style variables
port=$((30000 + $$ % 20000))
# launch NAME TIMEOUT "H H ..." CMD...: rank r runs CMD on host H_r; its
# output goes to $out/NAME.r, its exit status to $out/NAME.r.rc
launch() {
	lname=$1 ltmo=$2 layout=$3
	shift 3
	port=$((port + 1))
	world=$(echo $layout | wc -w)
	r=0 lpids=""
	for h in $layout; do
		( RANK=$r WORLD_SIZE=$world MASTER_ADDR=198.18.0.1 MASTER_PORT=$port \
			topo_exec "$h" timeout -k 5 "$ltmo" "$@" >"$out/$lname.$r" 2>&1
		  echo $? >"$out/$lname.$r.rc" ) &
		lpids="$lpids $!"
		r=$((r + 1))
	done
	for lp in $lpids; do wait "$lp"; done
}
# tap_job NAME: rank 0 printed TAP; the other ranks' comments and exit statuses count too
tap_job() {
	jname=$1
	t0=$(up)
	rc=0
	for f in "$out/$jname".*.rc; do [ "$(cat "$f")" = 0 ] || rc=$(cat "$f"); done
	before=$failed
	tap_fold "$jname" "$rc" "job $jname" <"$out/$jname.0"
	if [ "$failed" != "$before" ] || [ "$rc" != 0 ]; then
		for f in "$out/$jname".[1-9]; do sed 's/^/# /' "$f" | tail -8; done
	fi
}

# every job below on RDMA or failing (NPCCL_TRANSPORT=rdma: no pair may fall back to TCP)
export NPCCL_TRANSPORT=rdma NPCCL_EXPECT_TRANSPORT=rdma NPCCL_TIMEOUT_MS=60000 NPCCL_BOOTSTRAP_TIMEOUT_MS=60000

# 1. every collective x dtype x counts, 2 to 4 hosts (one rank each: every pair over RDMA)
for layout in "1 2" "1 2 3" "1 2 3 4"; do
	t0=$(up)
	p=$(echo $layout | wc -w)
	launch "matrix-p$p" 300 "$layout" "$TESTS/ccl-test" env-matrix
	tap_job "matrix-p$p"
	echo "# matrix p=$p: $(since "$t0") s"
done

# 2. two ranks per host: shared memory inside, RDMA between; every AllReduce
#    algorithm (hierarchical included) and every collective
t0=$(up)
launch hier 300 "1 1 2 2" "$TESTS/ccl-test" env-worker
nok=$(cat "$out"/hier.[0-3] | grep -c "^envcheck rank .* hosts 2 ok")
if [ "$nok" = 4 ]; then
	result 0 "2 hosts x 2 ranks (shm + RDMA): every AllReduce algorithm incl. hierarchical, every collective ($(grep -h predicted "$out"/hier.0 | sed 's/.*| //' | cut -c1-100))"
else
	result 1 "2 hosts x 2 ranks (shm + RDMA), hierarchical AllReduce ($nok of 4 ok)"
	cat "$out"/hier.[0-3] | sed 's/^/# /' | tail -12
fi
echo "# hier: $(since "$t0") s"

# 2b. deterministic reductions over RDMA, 2 hosts x 2 ranks (shm inside, RDMA
#     between); every result's bits equal the rank-order reference computed by
#     the test (--quick: the model's algorithm, 3 sizes: TCG is slow; the full
#     set runs natively in suites ccl and ccl-netns)
for layout in "1 1 2 2"; do
	t0=$(up)
	world=$(echo $layout | wc -w)
	launch "det-$world" 300 "$layout" env NPCCL_DETERMINISTIC=1 "$TESTS/ccl-det-test" env --quick
	nok=$(cat "$out/det-$world".[0-9] | grep -c "^detcheck rank .* ok")
	if [ "$nok" = "$world" ]; then
		result 0 "deterministic reductions over RDMA, hosts '$layout': every rank's bits equal the rank-order reference ($(sed 's/.*ok: //' "$out/det-$world.0" | cut -c1-90))"
	else
		result 1 "deterministic reductions over RDMA, hosts '$layout' ($nok of $world ranks ok)"
		cat "$out/det-$world".[0-9] | sed 's/^/# /' | tail -8
	fi
	echo "# det $layout: $(since "$t0") s"
done

# 3. npccl_mem_alloc buffers: zero copy, registration cache invalidated by npccl_mem_free
t0=$(up)
launch zc 200 "1 2" "$TESTS/ccl-test" env-zc
tap_job zc
echo "# zc: $(since "$t0") s"

# 3b. other buffers: registered and watched (the module's MMU notifiers), the
#     registration dropped when the pages change; and never registered with
#     NPCCL_RDMA_CACHE_BYTES=0
t0=$(up)
launch usercache 200 "1 2" "$TESTS/ccl-test" env-usercache
tap_job usercache
launch usercache0 200 "1 2" env NPCCL_RDMA_CACHE_BYTES=0 "$TESTS/ccl-test" env-usercache
tap_job usercache0
# the module's per-uid limit at 0: no range can be watched, so nothing is registered
wlimit=/sys/module/npushm/parameters/watch_ranges_per_uid
wsaved=$(cat "$wlimit")
echo 0 >"$wlimit"
launch usercachelimit 200 "1 2" env CCL_TEST_WATCH_LIMITED=1 "$TESTS/ccl-test" env-usercache
echo "$wsaved" >"$wlimit"
tap_job usercachelimit
echo "# usercache: $(since "$t0") s"

# 4. failures over RDMA: every survivor fails within the deadline naming the rank
# fault_job NAME EXPECT_STATUS EXPECT_TEXT LAYOUT SIGNAL VICTIM "VAR=VALUE ..." CMD...
# (SIGNAL: KILL, STOP or -; the victim rank's process gets it once all run)
victim_pid() {	# host rank
	ip netns pids "${TOPO_P}h$1" | while read -r vp; do
		# the rank's own process (comm), not the timeout or env wrappers
		[ "$(cat /proc/$vp/comm 2>/dev/null)" = ccl-test ] &&
			tr '\0' '\n' </proc/$vp/environ 2>/dev/null | grep -qx "RANK=$2" && echo "$vp"
	done | head -1
}
fault_job() {
	fname=$1 fstatus=$2 ftext=$3 flayout=$4 fsig=$5 fvictim=$6 fenv=$7
	shift 7
	t0=$(up)
	port=$((port + 1))	# launch runs in a subshell: its port increment is lost
	launch "$fname" 120 "$flayout" env $fenv "$@" &
	lpid=$!
	if [ "$fsig" != - ]; then
		fp=$(echo $flayout | wc -w)
		i=0
		until [ "$(cat "$out/$fname".[0-9] 2>/dev/null | grep -c "running")" = "$fp" ] || [ $i -ge 600 ]; do
			i=$((i + 1)); sleep 0.1
		done
		sleep 0.5
		vh=$(echo $flayout | cut -d' ' -f$((fvictim + 1)))
		vpid=$(victim_pid "$vh" "$fvictim")
		[ -n "$vpid" ] && kill -"$fsig" "$vpid"
	fi
	if [ "$fsig" = STOP ] && [ -n "$vpid" ]; then
		# the survivors are judged once they returned; then the victim goes on
		i=0
		until [ "$(ls "$out/$fname".*.rc 2>/dev/null | wc -l)" -ge $(($(echo $flayout | wc -w) - 1)) ] ||
		      [ $i -ge 1000 ]; do
			i=$((i + 1)); sleep 0.1
		done
		kill -CONT "$vpid" 2>/dev/null
	fi
	wait "$lpid"
	named=0 want=0
	r=0
	for h in $flayout; do
		if [ "$fsig" = - ] || [ $r != "$fvictim" ]; then
			want=$((want + 1))
			grep -q "rank $r status $fstatus: .*$ftext" "$out/$fname.$r" && named=$((named + 1))
		fi
		r=$((r + 1))
	done
	if [ $named = $want ] && { [ "$fsig" = - ] || [ -n "$vpid" ]; }; then
		result 0 "fault $fname over RDMA: all $want ranks fail with \"$fstatus\" naming \"$ftext\" ($(since "$t0") s)"
		grep -h "status" "$out/$fname.0" | sed 's/^/# /' | cut -c1-300
	else
		result 1 "fault $fname over RDMA ($named of $want ranks right; victim pid '${vpid:-}')"
		cat "$out/$fname".[0-9] | sed 's/^/# /' | tail -12
	fi
}
LOOP="$TESTS/ccl-test env-loop"
DIED="a peer process died or closed its connection"
MISMATCH="ranks made mismatched calls"
fault_job kill9 "$DIED" "rank 1" "1 2 3" KILL 1 NPCCL_TIMEOUT_MS=5000 $LOOP
fault_job sigstop "a peer did not arrive within the deadline" "rank 2" "1 2 3" STOP 2 \
	NPCCL_TIMEOUT_MS=2000 $LOOP
fault_job mismatch-count "$MISMATCH" "rank 1" "1 2 3" - 1 NPCCL_TIMEOUT_MS=5000 \
	"$TESTS/ccl-test" env-fault mismatch-count 1
fault_job mismatch-count-large "$MISMATCH" "rank 1" "1 2" - 1 NPCCL_TIMEOUT_MS=5000 \
	"$TESTS/ccl-test" env-fault mismatch-count-large 1
fault_job mismatch-root "$MISMATCH" "rank 1" "1 2 3" - 1 NPCCL_TIMEOUT_MS=5000 \
	"$TESTS/ccl-test" env-fault mismatch-root 1
fault_job qp-error "$DIED" "queue pair is in the error state" "1 2 3" - 1 \
	"NPCCL_TIMEOUT_MS=5000 NPCCL_FAULT_INJECT=qperr:1:6" $LOOP

# 5. one model load for the cluster over RDMA: every host with its own
#    npushm instance (a mount of the module's filesystem), ranks forced onto
#    RDMA (NPCCL_TRANSPORT=rdma fails the load if a pair has none)
t0=$(up)
ML_OUT=$out/ml
ML_ADDR=198.18.0.1
ML_PORT=$((port + 100))
mkdir -p "$ML_OUT"
ml_exec() {
	_h=$1
	shift
	mkdir -p "$out/npushm-h$_h"
	mountpoint -q "$out/npushm-h$_h" || mount -t npushm -o mode=1777 npushm "$out/npushm-h$_h"
	NPUSHM_BACKEND=kmod NPUSHM_DIR=$out/npushm-h$_h NPCCL_TRANSPORT=rdma topo_exec "$_h" "$@"
}
. "$root/ccl/tests/model-load-lib.sh"
ML_QUICK=1 ml_tests "1 2 3"	# the rest of the cases: ccl/tests/model-load-test.sh (suite ccl)
for _h in 1 2 3; do umount "$out/npushm-h$_h" 2>/dev/null; done
echo "# cluster load: $(since "$t0") s"

# 6. single copy without ptrace, last (ptrace_scope 3 holds until reboot):
#    2-3 ranks on one host, each under its own uid, Yama refusing every
#    ptrace attach and a seccomp filter refusing process_vm_readv/writev:
#    every collective and large Send/Recv still copy once, through the
#    ranks' npushm spaces (the copy counters say so), correct for every
#    dtype and op (counts 0, 1, p+1, 1025: the full sweep runs in suite
#    ccl, by CMA); a rank's unmap, remap, CoW and exit during the
#    copies give a defined error or the new contents, never stale data
t_sc=$(up)
if [ -w /proc/sys/kernel/yama/ptrace_scope ] && echo 3 > /proc/sys/kernel/yama/ptrace_scope; then
	part_within single-copy 400 "$TESTS/ccl-test" single-copy --uids --seccomp --require-space --quick
	part_within single-copy-race 200 "$TESTS/ccl-test" single-copy-race --uids --seccomp
else
	result 1 "single copy without ptrace: cannot set Yama's ptrace_scope to 3 in the VM"
fi
echo "# single copy without ptrace: $(since "$t_sc") s"

echo "# total: $(since 0) s since boot"
tap_end
