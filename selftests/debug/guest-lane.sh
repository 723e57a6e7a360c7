#!/bin/sh
# guest-lane.sh - inside the debug-kernel VM (started by run-debug-lane.sh):
# run the module selftest suite, then the fault-injection pass, then two
# kmemleak scans, and leave everything the host needs to judge the run in
# $DEBUG_OUT (the run-vm.sh result share):
#   pass-suite.{tap,rc,secs}  pass-fault.{tap,rc,secs}  kmemleak.txt (or kmemleak.unavailable)
#   taint.before taint.after  lockdep_stats  modules.after  detectors  guest.done (written last)
# Environment: DEBUG_OUT, DEBUG_SUITE (a shell command), DEBUG_FAULT_SUITE
# (a shell command, empty: no fault pass), DEBUG_FAULT_OPTS (fail-inject.sh
# options), NPUSHM_KO (the module built against this kernel, for the suites).
# Always exits 0 when it got to the end: the host decides pass or fail.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${DEBUG_OUT:?DEBUG_OUT not set}
kml=/sys/kernel/debug/kmemleak
NPUSHM_KO=${NPUSHM_KO:-}
export NPUSHM_KO

echo "# debug lane: kernel $(uname -r), module ${NPUSHM_KO:-none}, tainted $(cat /proc/sys/kernel/tainted)"
cat /proc/sys/kernel/tainted > "$out/taint.before"
# The deadlock detectors, as armed (check-logs.sh checks them).
for k in hung_task_timeout_secs hung_task_panic softlockup_panic watchdog; do
	echo "$k=$(cat /proc/sys/kernel/$k 2>/dev/null || echo missing)"
done > "$out/detectors"

pass() { # pass NAME COMMAND: run COMMAND with sh -c, output to the console and pass-NAME.tap
	name=$1 cmd=$2
	echo "# debug lane: pass $name: $cmd"
	t0=$(date +%s)
	{ sh -c "$cmd" 2>&1; echo $? > "$out/pass-$name.rc"; } | tee "$out/pass-$name.tap"
	echo $(($(date +%s) - t0)) > "$out/pass-$name.secs"
	echo "# debug lane: pass $name: exit status $(cat "$out/pass-$name.rc") after $(cat "$out/pass-$name.secs") s"
}

pass suite "$DEBUG_SUITE"
# A module still loaded here means the suite's rmmod failed: something
# holds it (a task stuck in the module for 30 s would already have panicked
# the kernel: hung-task detector). Show the blocked tasks (sysrq-w: their
# stacks go to the kernel log, for the report; the failed rmmod fails the
# run) and skip the fault pass, which could only hang on the same task.
modname=$(basename "${NPUSHM_KO:-npushm.ko}" .ko)
stuck=
if grep -q "^$modname " /proc/modules; then
	stuck=1
	echo "# debug lane: $modname is still loaded after the suite (rmmod failed): blocked tasks" \
		"follow in the kernel log; fault pass skipped"
	echo 1 > /proc/sys/kernel/sysrq
	echo w > /proc/sysrq-trigger
	sleep 1
fi
if [ -n "${DEBUG_FAULT_SUITE:-}" ] && [ -z "$stuck" ]; then
	export DEBUG_FAULT_SUITE
	# DEBUG_FAULT_OPTS is a list of options: split on purpose.
	pass fault "'$here/fail-inject.sh' ${DEBUG_FAULT_OPTS:-} -- sh -c \"\$DEBUG_FAULT_SUITE\""
	"$here/fail-inject.sh" --off
fi

cat /proc/modules > "$out/modules.after"

# kmemleak only reports objects at least 5 s old, and a second scan drops the
# transient suspects of the first: let the last pass's objects age, scan twice.
sleep 6
t0=$(date +%s)
if echo scan > "$kml" 2>/dev/null && echo scan > "$kml" 2>/dev/null && cat "$kml" > "$out/kmemleak.txt"; then
	# (worded so that the VM runner's kernel-report patterns do not match it)
	echo "# debug lane: 2 kmemleak scans in $(($(date +%s) - t0)) s, objects reported:" \
		"$(grep -c 'unreferenced object' "$out/kmemleak.txt")"
else
	rm -f "$out/kmemleak.txt"
	echo "kmemleak could not scan at the end of the run ($kml: disabled itself? see dmesg)" > "$out/kmemleak.unavailable"
fi

cat /proc/sys/kernel/tainted > "$out/taint.after"
cat /proc/lockdep_stats > "$out/lockdep_stats" 2>/dev/null
date +%s > "$out/guest.done"
exit 0
