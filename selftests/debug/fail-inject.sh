#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# fail-inject.sh - inside the debug-kernel VM: run a command with the kernel's
# fault injection (failslab, fail_page_alloc, fail_usercopy) aimed at that
# command only, then put the injection settings back to their defaults.
#
#   fail-inject.sh [--slab] [--page] [--usercopy] [MODE] [--verbose V] -- CMD [ARGS...]
#   fail-inject.sh --off          restore the defaults (nothing injected)
#
# Capabilities (default: --slab --page):
#   --slab       kmalloc / kmem_cache_alloc, sleeping (GFP_KERNEL) ones included
#   --page       alloc_pages of any order, highmem/movable (user page) ones included
#   --usercopy   copy_{from,to}_user, strncpy_from_user
# MODE (default --arm):
#   --arm        nothing fails by itself. CMD chooses which call fails by writing
#                N to /proc/thread-self/fail-nth just before the call under test
#                (selftests/debug/fail_nth.h): that is how a test loops one module
#                entry point through every injection point it reaches.
#   --probability P [--interval I] [--times T] [--space BYTES]
#                every injection point reached by CMD's task (and its children,
#                /proc/self/make-it-fail is inherited) fails with probability
#                P% (every Ith one, at most T times, -1 = no limit; after BYTES
#                of allocations). Other tasks are never failed (task-filter=Y).
#                CMD's own exec is already a target. Keep T small: unlimited
#                failures in a task that reads files over 9p (binaries and
#                libraries come from the host's root that way) can leave the
#                guest's 9p mount broken for every later process (6.1's 9p
#                client: later opens fail with EINVAL).
#   --nth N      the Nth injection point reached by CMD's task, counted from just
#                before its exec, fails (once). Exec and the dynamic loader reach
#                the first few hundred; prefer --arm with fail_nth.h for tests.
# CMD sees NPUSHM_FAULT_INJECT=<arm|probability|nth> and NPUSHM_FAULT_CAPS
# (e.g. "slab page"). fail-nth counts every injection point whatever the
# capabilities chosen: usercopy ones (-EFAULT) and atomic allocations included.
# --verbose V: 0 silent, 1 (default) one "FAULT_INJECTION: forcing a failure"
# line per failure in the kernel log, 2 with a stack trace.
# Exit status: CMD's; 2 on a usage error; 4 if this kernel has no fault
# injection (it is not the debug kernel: run it with make check-debug).
set -u
dfs=/sys/kernel/debug
usage() {
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

caps='' mode=arm prob='' interval=1 times=-1 space=0 nth='' verbose=1 off=0
while [ $# -gt 0 ]; do
	case "$1" in
	--slab) caps="$caps slab"; shift ;;
	--page) caps="$caps page"; shift ;;
	--usercopy) caps="$caps usercopy"; shift ;;
	--arm) mode=arm; shift ;;
	--probability) mode=probability; prob=${2:?}; shift 2 ;;
	--interval) interval=${2:?}; shift 2 ;;
	--times) times=${2:?}; shift 2 ;;
	--space) space=${2:?}; shift 2 ;;
	--nth) mode=nth; nth=${2:?}; shift 2 ;;
	--verbose) verbose=${2:?}; shift 2 ;;
	--off) off=1; shift ;;
	--) shift; break ;;
	-h|--help) usage ;;
	*) echo "fail-inject: unknown option $1" >&2; usage ;;
	esac
done
[ -n "$caps" ] || caps=" slab page"
caps=${caps# }
[ "$off" = 1 ] || [ $# -gt 0 ] || { echo "fail-inject: no command given" >&2; usage; }
for v in "$interval" "$space" "$verbose" ${prob:+"$prob"} ${nth:+"$nth"}; do
	case "$v" in ''|*[!0-9]*) echo "fail-inject: '$v' is not a non-negative number" >&2; exit 2 ;; esac
done
case "$times" in -1|[0-9]*) ;; *) echo "fail-inject: --times takes a count or -1" >&2; exit 2 ;; esac
[ -z "$prob" ] || [ "$prob" -le 100 ] || { echo "fail-inject: --probability is a percentage (0-100)" >&2; exit 2; }

for c in failslab fail_page_alloc fail_usercopy; do
	[ -d "$dfs/$c" ] || {
		echo "fail-inject: $dfs/$c missing: kernel $(uname -r) has no fault injection" \
			"(CONFIG_FAULT_INJECTION_DEBUG_FS, FAILSLAB, FAIL_PAGE_ALLOC, FAULT_INJECTION_USERCOPY);" \
			"run this in the debug-kernel VM (make check-debug)" >&2
		exit 4
	}
done

put() { # put VALUE FILE: write a debugfs attribute or fail loudly
	printf '%s\n' "$1" > "$dfs/$2" 2>/dev/null || { echo "fail-inject: cannot write '$1' to $dfs/$2" >&2; exit 1; }
}
defaults() { # the kernel's boot-time settings: nothing is injected
	for c in failslab fail_page_alloc fail_usercopy; do
		put 0 "$c/probability"; put 1 "$c/interval"; put 1 "$c/times"; put 0 "$c/space"
		put N "$c/task-filter"; put 2 "$c/verbose"
	done
	put Y failslab/ignore-gfp-wait
	put Y fail_page_alloc/ignore-gfp-wait; put Y fail_page_alloc/ignore-gfp-highmem; put 1 fail_page_alloc/min-order
}
defaults
[ "$off" = 1 ] && exit 0

for c in failslab fail_page_alloc fail_usercopy; do
	put "$verbose" "$c/verbose"	# fail-nth fires in all three, chosen or not
done
for cap in $caps; do
	case "$cap" in
	slab) c=failslab; put N failslab/ignore-gfp-wait ;;
	page) c=fail_page_alloc; put N fail_page_alloc/ignore-gfp-wait
	      put N fail_page_alloc/ignore-gfp-highmem; put 0 fail_page_alloc/min-order ;;
	usercopy) c=fail_usercopy ;;
	esac
	put Y "$c/task-filter"
	if [ "$mode" = probability ]; then
		put "$interval" "$c/interval"; put "$times" "$c/times"; put "$space" "$c/space"
		put "$prob" "$c/probability"
	fi
done

NPUSHM_FAULT_INJECT=$mode NPUSHM_FAULT_CAPS=$caps
export NPUSHM_FAULT_INJECT NPUSHM_FAULT_CAPS
echo "# fail-inject: $mode${prob:+ $prob%}${nth:+ nth=$nth} on: $caps; running: $*" >&2
case "$mode" in
probability) sh -c 'echo 1 > /proc/self/make-it-fail && exec "$@"' fail-inject "$@" ;;
nth) sh -c 'n=$1; shift; echo "$n" > /proc/self/fail-nth && exec "$@"' fail-inject "$nth" "$@" ;;
*) "$@" ;;
esac
rc=$?
defaults
exit $rc
