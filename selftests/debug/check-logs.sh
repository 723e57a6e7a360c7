#!/bin/sh
# check-logs.sh - judge one debug-lane VM run from what it left in its result
# directory (console.log, dmesg.txt, kmemleak.txt, taint.after, lockdep_stats,
# modules.after; see guest-lane.sh) and print one TAP result per detector.
#
#   check-logs.sh OUTDIR FIRST [MODULE]
#
# Prints "ok/not ok N ..." for N = FIRST .. FIRST+6 (KASAN, lockdep and
# atomic-sleep, kmemleak, other WARNING/BUG/Oops/panic, taint, MODULE not left
# loaded, deadlock detectors armed), with the offending kernel lines as "#"
# comments. Exit 1 if any failed. A problem is counted by the first detector
# whose pattern matches.
set -u
out=${1:?usage: check-logs.sh OUTDIR FIRST [MODULE]}
n=${2:?usage: check-logs.sh OUTDIR FIRST [MODULE]}
mod=${3:-}
fail=0

kasan='KASAN:'
lockdep='WARNING: possible|possible circular locking|possible recursive locking|inconsistent lock state|'\
'WARNING: bad unlock balance|WARNING: held lock freed|WARNING: suspicious RCU usage|'\
'lock held when returning to user space|still has locks held|BUG: sleeping function called from invalid context|'\
'BUG: scheduling while atomic|INFO: trying to register non-static key|DEBUG_LOCKS_WARN_ON|BUG: MAX_LOCKDEP|'\
'BUG: looking up invalid subclass|BUG: key .* has not been registered'
other='WARNING:|BUG:|Oops|Kernel panic|general protection fault|kernel BUG at|UBSAN:|invalid opcode:|'\
'INFO: task .* blocked|rcu: INFO: .*detected stall|Unable to handle kernel|ODEBUG:|list_(add|del) corruption|'\
'kmemleak: .*(disabl|[Ee]rror)'

# The kernel log: dmesg.txt (complete, saved at the end) and console.log
# (what got out if the VM died first), timestamps stripped, each line once.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cat "$out/dmesg.txt" "$out/console.log" 2>/dev/null | tr -d '\r' |
	sed 's/^<[0-9]*>//; s/^\[ *[0-9]*\.[0-9]*\] //' | awk '!seen[$0]++' > "$log"

result() { # result OK DESCRIPTION [DETAIL-FILE-OR-TEXT...]
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		fail=1
		shift 2
		for d in "$@"; do [ -z "$d" ] || printf "%s\n" "$d"; done | head -n 40 | sed "s/^/#   /"
	fi
	n=$((n + 1))
}

first() { # first PATTERN [EXCLUDE]: the first matching report, 14 lines from its first line
	awk -v p="$1" -v x="${2:-^\$^}" 'c == 0 && $0 ~ p && $0 !~ x { c = 15 } c > 0 { print; c-- }' "$log"
}

hits=$(grep -E "$kasan" "$log")
result "$([ -z "$hits" ]; echo $?)" "no KASAN report ($(printf "%s" "$hits" | grep -c "BUG: KASAN:") found)" \
	"first report:" "$(first "$kasan")"

hits=$(grep -E "$lockdep" "$log" | grep -Ev "$kasan")
dl=$(awk '/debug_locks:/ { print $2 }' "$out/lockdep_stats" 2>/dev/null)
bad=0
[ -z "$hits" ] || bad=1
[ "$dl" = 1 ] || bad=1
result "$bad" "lockdep and atomic-sleep checks: no report (debug_locks=${dl:-unknown})" \
	"$([ -z "$hits" ] || { echo "first report:"; first "$lockdep" "$kasan"; })" \
	"$([ "$dl" = 1 ] || echo "lockdep is off at the end of the run (debug_locks=${dl:-unknown}): turned off by its own report, by any report that taints the kernel (KASAN, WARN), or by a lockdep limit (BUG: MAX_LOCKDEP_...)")"

if [ -f "$out/kmemleak.txt" ]; then
	c=$(grep -c 'unreferenced object' "$out/kmemleak.txt")
	result "$([ "$c" = 0 ]; echo $?)" "kmemleak: no unreferenced object after 2 scans ($c)" \
		"$(head -n 30 "$out/kmemleak.txt")"
else
	result 1 "kmemleak: no unreferenced object after 2 scans" \
		"$(cat "$out/kmemleak.unavailable" 2>/dev/null || echo "the run ended before the kmemleak scans")"
fi

hits=$(grep -E "$other" "$log" | grep -Ev "$kasan|$lockdep")
result "$([ -z "$hits" ]; echo $?)" "no other WARNING, BUG, Oops or panic" \
	"matching lines:" "$(printf '%s\n' "$hits" | head -n 8)" "first report:" "$(first "$other" "$kasan|$lockdep")"

# Taint: only TAINT_OOT_MODULE (O, 4096) and TAINT_UNSIGNED_MODULE (E, 8192) are allowed.
t=$(cat "$out/taint.after" 2>/dev/null || echo unknown)
if [ "$t" = unknown ]; then
	result 1 "taint: only out-of-tree/unsigned module flags" "the run ended before the taint was read"
else
	letters() { awk -v t="$1" 'BEGIN { s = "PFSRMBUDAWCIOELKXTN"; for (i = 0; i < length(s); i++) if (int(t / 2^i) % 2) r = r substr(s, i + 1, 1); print r }'; }
	extra=$((t & ~(4096 | 8192)))
	result "$([ "$extra" = 0 ]; echo $?)" "taint: only out-of-tree/unsigned module flags (tainted=$t $(letters "$t"))" \
		"flags $(letters "$extra") ($extra) are beyond O and E (Documentation/admin-guide/tainted-kernels.rst)"
fi

if [ -n "$mod" ]; then
	m=$(echo "$mod" | tr - _)
	if [ ! -f "$out/modules.after" ]; then
		result 1 "$m unloaded at the end" "the run ended before the module list was read"
	else
		l=$(grep "^$m " "$out/modules.after")
		result "$([ -z "$l" ]; echo $?)" "$m unloaded at the end" "still loaded: $l"
	fi
else
	result 0 "module unloaded at the end # SKIP no module under test"
fi

# The hung-task (a short timeout) and soft-lockup detectors must have been
# armed, panicking, so that a deadlock fails the run fast.
if [ -f "$out/detectors" ]; then
	d=$(tr '\n' ' ' < "$out/detectors")
	t=$(sed -n 's/^hung_task_timeout_secs=//p' "$out/detectors")
	ok=1
	case "$t" in ''|*[!0-9]*) ok=0 ;; *) [ "$t" -ge 1 ] && [ "$t" -le 60 ] || ok=0 ;; esac
	for k in hung_task_panic softlockup_panic watchdog; do
		grep -qx "$k=1" "$out/detectors" || ok=0
	done
	result "$([ "$ok" = 1 ]; echo $?)" "deadlock detectors armed ($d)" "hung_task_timeout_secs must be 1..60 and the rest 1: $d"
else
	result 1 "deadlock detectors armed" "the run ended before the guest read them"
fi
exit $fail
