#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# check-logs.sh - judge one debug-lane VM run from what it left in its result
# directory (console.log, dmesg.txt, kmemleak.txt, taint.after, lockdep_stats,
# modules.after; see guest-lane.sh) and print one TAP result per detector
# (tools/tap.sh).
#
#   check-logs.sh OUTDIR [MODULE]
#
# Seven results (KASAN, lockdep and atomic-sleep, kmemleak, other
# WARNING/BUG/Oops/panic, taint, MODULE not left loaded, deadlock detectors
# armed), with the offending kernel lines as "#" comments. Exit 1 if any
# failed. A problem is counted by the first detector whose pattern matches.
set -u
out=${1:?usage: check-logs.sh OUTDIR [MODULE]}
mod=${2:-}
. "$(cd "$(dirname "$0")/../.." && pwd)/tools/tap.sh"

kasan='KASAN:'
lockdep='WARNING: possible|possible circular locking|possible recursive locking|inconsistent lock state|'\
'WARNING: bad unlock balance|WARNING: held lock freed|WARNING: suspicious RCU usage|'\
'lock held when returning to user space|still has locks held|BUG: sleeping function called from invalid context|'\
'BUG: scheduling while atomic|INFO: trying to register non-static key|DEBUG_LOCKS_WARN_ON|BUG: MAX_LOCKDEP|'\
'BUG: looking up invalid subclass|BUG: key .* has not been registered'
other='WARNING:|BUG:|Oops|Kernel panic|general protection fault|kernel BUG at|UBSAN:|invalid opcode:|'\
'INFO: task .* blocked|rcu: INFO: .*detected stall|Unable to handle kernel|ODEBUG:|list_(add|del) corruption|'\
'kmemleak: .*(disabl|[Ee]rror)'
# The kernel's own WARN when an injected allocation failure hits its module
# loader's bookkeeping: jump_label_add_module() WARNs "Failed to allocate
# memory: jump_label may not work properly", then jump_label_del_module()
# WARNs on the half-made list. Any module whose code uses a kernel static key
# or tracepoint meets it in the fault pass's modinit loop (npushm does through
# mmap_read_lock()'s mmap_lock tracepoints, in spaces): a 6.1 kernel path, not
# a module bug. Allowed only in a run that injected failures; any other
# WARNING still fails, and so does the taint it leaves unless these are the
# run's only WARNINGs.
kernel_own='WARNING: CPU: [0-9]+ PID: [0-9]+ at kernel/jump_label\.c:[0-9]+ jump_label_(module_notify|del_module)'

# The kernel log: dmesg.txt (complete, saved at the end) and console.log
# (what got out if the VM died first), timestamps stripped, each line once.
log=$(mktemp)
detail=$(mktemp)
trap 'rm -f "$log" "$detail"' EXIT
cat "$out/dmesg.txt" "$out/console.log" 2>/dev/null | tr -d '\r' |
	sed 's/^<[0-9]*>//; s/^\[ *[0-9]*\.[0-9]*\] //' | awk '!seen[$0]++' > "$log"
grep -q 'FAULT_INJECTION: forcing a failure' "$log" || kernel_own='^$^'

judge() { # judge OK DESCRIPTION [DETAIL-TEXT...]: one result, the details shown on failure
	_ok=$1 _desc=$2
	shift 2
	for d in "$@"; do [ -z "$d" ] || printf "%s\n" "$d"; done | head -n 40 > "$detail"
	result "$_ok" "$_desc"
	[ "$_ok" = 0 ] || sed 's/^/#   /' "$detail"
}

first() { # first PATTERN [EXCLUDE]: the first matching report, 14 lines from its first line
	awk -v p="$1" -v x="${2:-^\$^}" 'c == 0 && $0 ~ p && $0 !~ x { c = 15 } c > 0 { print; c-- }' "$log"
}

hits=$(grep -E "$kasan" "$log")
judge "$([ -z "$hits" ]; echo $?)" "no KASAN report ($(printf "%s" "$hits" | grep -c "BUG: KASAN:") found)" \
	"first report:" "$(first "$kasan")"

hits=$(grep -E "$lockdep" "$log" | grep -Ev "$kasan")
dl=$(awk '/debug_locks:/ { print $2 }' "$out/lockdep_stats" 2>/dev/null)
bad=0
[ -z "$hits" ] || bad=1
[ "$dl" = 1 ] || bad=1
judge "$bad" "lockdep and atomic-sleep checks: no report (debug_locks=${dl:-unknown})" \
	"$([ -z "$hits" ] || { echo "first report:"; first "$lockdep" "$kasan"; })" \
	"$([ "$dl" = 1 ] || echo "lockdep is off at the end of the run (debug_locks=${dl:-unknown}): turned off by its own report, by any report that taints the kernel (KASAN, WARN), or by a lockdep limit (BUG: MAX_LOCKDEP_...)")"

if [ -f "$out/kmemleak.txt" ]; then
	c=$(grep -c 'unreferenced object' "$out/kmemleak.txt")
	judge "$([ "$c" = 0 ]; echo $?)" "kmemleak: no unreferenced object after 2 scans ($c)" \
		"$(head -n 30 "$out/kmemleak.txt")"
else
	judge 1 "kmemleak: no unreferenced object after 2 scans" \
		"$(cat "$out/kmemleak.unavailable" 2>/dev/null || echo "the run ended before the kmemleak scans")"
fi

hits=$(grep -E "$other" "$log" | grep -Ev "$kasan|$lockdep|$kernel_own")
allowed=$(grep -Ec "$kernel_own" "$log")
judge "$([ -z "$hits" ]; echo $?)" \
	"no other WARNING, BUG, Oops or panic$([ "$allowed" = 0 ] || echo " ($allowed of the kernel's own jump-label WARNs under injected failures allowed)")" \
	"matching lines:" "$(printf '%s\n' "$hits" | head -n 8)" "first report:" "$(first "$other" "$kasan|$lockdep|$kernel_own")"

# Taint: only TAINT_OOT_MODULE (O, 4096) and TAINT_UNSIGNED_MODULE (E, 8192)
# are allowed, and TAINT_WARN (W, 512) when the kernel's own jump-label WARNs
# above are the run's only WARNINGs.
t=$(cat "$out/taint.after" 2>/dev/null || echo unknown)
okmask=$((4096 | 8192))
if [ "$allowed" != 0 ] && ! grep -E 'WARNING:' "$log" | grep -Evq "$kernel_own"; then
	okmask=$((okmask | 512))
fi
if [ "$t" = unknown ]; then
	judge 1 "taint: only out-of-tree/unsigned module flags" "the run ended before the taint was read"
else
	letters() { awk -v t="$1" 'BEGIN { s = "PFSRMBUDAWCIOELKXTN"; for (i = 0; i < length(s); i++) if (int(t / 2^i) % 2) r = r substr(s, i + 1, 1); print r }'; }
	extra=$((t & ~okmask))
	judge "$([ "$extra" = 0 ]; echo $?)" "taint: only out-of-tree/unsigned module flags (tainted=$t $(letters "$t")$([ "$okmask" = 12288 ] || echo ", W from the kernel's own WARNs above"))" \
		"flags $(letters "$extra") ($extra) are beyond O and E (Documentation/admin-guide/tainted-kernels.rst)"
fi

if [ -n "$mod" ]; then
	m=$(echo "$mod" | tr - _)
	if [ ! -f "$out/modules.after" ]; then
		judge 1 "$m unloaded at the end" "the run ended before the module list was read"
	else
		l=$(grep "^$m " "$out/modules.after")
		judge "$([ -z "$l" ]; echo $?)" "$m unloaded at the end" "still loaded: $l"
	fi
else
	tap_skip "module unloaded at the end" "no module under test"
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
	judge "$([ "$ok" = 1 ]; echo $?)" "deadlock detectors armed ($d)" "hung_task_timeout_secs must be 1..60 and the rest 1: $d"
else
	judge 1 "deadlock detectors armed" "the run ended before the guest read them"
fi
tap_end
