#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-debug-lane.sh - the debug-kernel lane (make check-debug): build or reuse
# the cached debug kernel, build npushm.ko against it (apart from the stock
# build), boot it with selftests/vm/run-vm.sh, run the module selftests and the
# fault-injection pass inside, scan kmemleak twice, and print TAP through
# tools/tap.sh: one result per step, every test of each pass (folded in,
# prefixed "suite" or "fault pass"), one result per detector (check-logs.sh).
#
#   run-debug-lane.sh [--if-cached]
#
# --if-cached: when the debug kernel is not built yet, print one "# SKIP"
# result and exit 0 instead of building it (25-60 minutes).
# Environment (make variables of the same name in selftests/debug/debug.mk):
#   DEBUG_SUITE        suite command run in the VM, from the checkout
#                      (default selftests/run-module-tests.sh)
#   DEBUG_FAULT_SUITE  command for the fault-injection pass (default: DEBUG_SUITE;
#                      empty: no fault pass); runs under
#   DEBUG_FAULT_OPTS   fail-inject.sh options (default "--slab --page --arm")
#   DEBUG_KO           test this already built .ko instead of building kmod/
#   DEBUG_VM_APPEND    extra kernel arguments; DEBUG_VM_MEM (2G), DEBUG_TIMEOUT (s, 3600)
#   NPUSHM_TEST_PARAMS passed to the guest unchanged
# The module under test reaches the suite as NPUSHM_KO (a path), its
# fault-injection mode as NPUSHM_FAULT_INJECT. Exit status 1 on any failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top" || exit 1
BUILD=${BUILD:-$top/build}
export BUILD
suite=${DEBUG_SUITE-selftests/run-module-tests.sh}
fsuite=${DEBUG_FAULT_SUITE-$suite}
fopts=${DEBUG_FAULT_OPTS:---slab --page --arm}
tmo=${DEBUG_TIMEOUT:-3600}
mem=${DEBUG_VM_MEM:-2G}
work=$BUILD/debug
. "$top/tools/tap.sh"

ok() { result 0 "$*"; }
notok() { result 1 "$*"; }
comment() { sed 's/^/# /'; }
bail() { # after a failed step nothing more can run: the plan, and out
	echo "# the lane stopped: $1"
	tap_end
	exit 1
}

if [ "${1:-}" = --if-cached ] && ! "$here/build-kernel.sh" --cached 2>/dev/null; then
	tap_skip "debug-kernel lane" "no cached debug kernel at $("$here/build-kernel.sh" --dir 2>/dev/null) (warm it: make debug-kernel)"
	tap_end
	exit 0
fi

# 1. The kernel (reused when cached).
t0=$(date +%s)
if ! dir=$("$here/build-kernel.sh" 2> >(comment >&2) | tail -n 1) || [ ! -f "$dir/stamp" ]; then
	notok "debug kernel: build failed (see the messages above and the cache's build.log)"
	bail "no debug kernel"
fi
rel=$(sed -n 's/^release=//p' "$dir/stamp")
ok "debug kernel $rel ($dir, $(($(date +%s) - t0)) s)"

# 2. The module, built against that tree in a copy of the sources, so that
# the stock kmod/npushm.ko is left alone.
mkdir -p "$work/bin"
if [ -n "${DEBUG_KO:-}" ]; then
	ko=$(cd "$(dirname "$DEBUG_KO")" && pwd)/$(basename "$DEBUG_KO")
	vm=$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)
	if [ "$vm" = "$rel" ]; then
		ok "module under test: $ko (given, vermagic $vm)"
	else
		notok "module under test: $ko has vermagic '${vm:-none}', not $rel: build it with make -C $dir/linux M=..."
		bail "no module for the debug kernel"
	fi
elif [ ! -f kmod/Kbuild ]; then
	notok "npushm.ko for the debug kernel: kmod/Kbuild does not exist yet (no module to test)"
	bail "no module"
else
	# A fresh copy every run (a full build takes seconds): reusing objects
	# by mtime would miss a file put back to an older version.
	src=$work/kmod-src
	rm -rf "$src"
	mkdir -p "$src"
	tar -cf - --exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' \
		--exclude='.*.cmd' --exclude='modules.order' --exclude='Module.symvers' \
		Kbuild kmod include | tar -xf - -C "$src"
	t0=$(date +%s)
	if make -C "$dir/linux" M="$src" modules > "$work/kmod-build.log" 2>&1; then
		ko=$src/kmod/npushm.ko
		ok "npushm.ko built against the debug tree ($(($(date +%s) - t0)) s, $ko)"
	else
		notok "npushm.ko does not build against the debug tree (make -C $dir/linux M=$src modules)"
		tail -n 30 "$work/kmod-build.log" | comment
		bail "no module"
	fi
fi
kmodname=$(basename "$ko" .ko)

# The suites must exist (the checkout is what the guest sees).
for c in "$suite" "$fsuite"; do
	[ -n "$c" ] || continue
	f=${c%% *}
	if [ ! -x "$f" ]; then
		notok "module selftests: $f does not exist yet (or is not executable); it loads \$NPUSHM_KO" \
			"with the test parameters, runs the kselftest binaries and prints TAP. Set DEBUG_SUITE to run another suite."
		bail "no selftest suite"
	fi
done

# The fault-injection demo (plain syscalls) used by standin-tests.sh.
cc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -o "$work/bin/fault-loop" "$here/fault-loop.c" ||
	{ notok "cannot build $here/fault-loop.c"; bail "build error"; }

# 3. Boot and run. KASAN and WARN must not stop the run: the whole run is
# checked at the end (oops=panic still ends it on an Oops).
vmout=$work/vm
rm -rf "$vmout"
mkdir -p "$vmout"
# no5lvl: with qemu's -cpu max the kernel runs 5-level paging, where
# pgtable_l5_enabled() follows the LA57 feature bit; identify_boot_cpu()
# clears and re-detects the feature bits with interrupts on, and an
# interrupt in that window makes KASAN take every direct-map address for a
# wild access (a storm of "BUG: KASAN: wild-memory-access" at boot, seen
# under TCG when the boot is slow). 4-level paging has no such window.
append="no5lvl swiotlb=force panic_on_warn=0 kasan_multi_shot kasan.fault=report log_buf_len=8M ${DEBUG_VM_APPEND:-}"
echo "# booting $rel (under a minute), then: $suite${fsuite:+; fault pass: fail-inject.sh $fopts -- $fsuite}"
t0=$(date +%s)
VM_KERNEL_ROOT=$dir/root VM_APPEND=$append VM_REPORTS_JUDGED_BY="the debug lane (check-logs.sh)" \
	"$top/selftests/vm/run-vm.sh" -m "$mem" -t "$tmo" -o "$vmout" -- \
	env DEBUG_OUT="$vmout" NPUSHM_KO="$ko" DEBUG_SUITE="$suite" DEBUG_FAULT_SUITE="$fsuite" \
	DEBUG_FAULT_OPTS="$fopts" NPUSHM_TEST_PARAMS="${NPUSHM_TEST_PARAMS:-}" PATH="$work/bin:$PATH" \
	sh "$here/guest-lane.sh" 2>&1 | comment
vrc=${PIPESTATUS[0]}
secs=$(($(date +%s) - t0))
if [ -f "$vmout/guest.done" ]; then
	ok "the debug VM ran the lane to the end ($secs s)"
else
	notok "the debug VM did not run the lane to the end (run-vm.sh status $vrc after $secs s: panic, Oops or timeout; see $vmout/console.log)"
	tail -n 40 "$vmout/console.log" 2>/dev/null | comment
fi

# The passes: every test of each folded in (a pass that did not get to its
# end, or exited non-zero without a failing test, adds a failing result).
passresult() { # passresult NAME PREFIX
	local rc
	if [ ! -f "$vmout/pass-$1.rc" ]; then
		notok "$2: did not run to the end"
		return
	fi
	rc=$(cat "$vmout/pass-$1.rc")
	echo "# $2: exit status $rc after $(cat "$vmout/pass-$1.secs" 2>/dev/null) s"
	tap_fold "$2" "$rc" "" < "$vmout/pass-$1.tap"
}
passresult suite "suite"
if [ -n "$fsuite" ]; then
	passresult fault "fault pass"
else
	tap_skip "fault-injection pass" "DEBUG_FAULT_SUITE is empty"
fi

# The detectors, a result each.
part detectors "$here/check-logs.sh" "$vmout" "$kmodname"
if [ "$failed" != 0 ]; then
	echo "# debug lane FAILED: console $vmout/console.log, kernel log $vmout/dmesg.txt, kmemleak $vmout/kmemleak.txt"
fi
tap_end
