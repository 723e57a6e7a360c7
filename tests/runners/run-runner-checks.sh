#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-runner-checks.sh - suite "runners" (TAP): the test-runner contract of
# the tree holds.
#  1. every shell script a Makefile fragment hands to tools/run-suite (and the
#     command it has selftests/vm/vm-suite.sh run in the VM) sources
#     tools/tap.sh, itself or through a runner library of the tree it sources;
#  2. no shell script but tools/tap.sh prints a TAP result line ("ok N",
#     "not ok N") itself;
#  3. only selftests/vm/vm-suite.sh boots the test VM for a suite:
#     selftests/vm/run-vm.sh is called by nothing else but the benchmarks,
#     the kmod demo (apps/bert/bert.mk) and the two named exceptions below.
# Exceptions to 3, named with their reason: the debug lane
# (selftests/debug/: its own kernel and VM options) and suite packages' one
# VM step (tests/packages: the module DKMS built, not kmod/npushm.ko).
#
#   run-runner-checks.sh [TREE]     TREE: a checkout (default: this one)
root=$(cd "$(dirname "$0")/../.." && pwd)
tree=${1:-$root}
. "$root/tools/tap.sh"
out=$(mktemp -d /tmp/npushm-runners.XXXXXX)
trap 'rm -rf "$out"' EXIT
cd "$tree" || exit 1

# 1. the scripts the fragments run as suites: every *.sh word of a recipe
# that calls tools/run-suite, its continuation lines included
for mk in */*.mk */*/*.mk; do
	awk '/tools\/run-suite/ { on = 1 } on { print } on && !/\\$/ { on = 0 }' "$mk"
done | tr ' \t' '\n\n' | grep '\.sh$' |
	sed -e 's/^\$(CCL_DIR)/ccl/' -e 's/^\$(TENSOR_DIR)/tensor/' -e 's/^\$(DEBUG_DIR)/selftests\/debug/' \
		-e 's/^\$(CURDIR)\///' | LC_ALL=C sort -u > "$out/runners"
: > "$out/bad"
# sources_tap FILE: FILE sources tools/tap.sh, itself or through a runner
# library of the tree it sources (". "$root/selftests/vm/engine-kmod.sh"")
sources_tap() {
	grep -q 'tools/tap\.sh\|/tap\.sh"' "$1" && return 0
	for lib in $(sed -n 's|^\. "\$[a-z]*/\([^"$]*\.sh\)"$|\1|p' "$1"); do
		[ -f "$lib" ] && grep -q 'tools/tap\.sh' "$lib" && return 0
	done
	return 1
}
while read -r s; do
	[ -f "$s" ] || { echo "$s: named by a fragment, not in the tree" >> "$out/bad"; continue; }
	sources_tap "$s" || echo "$s does not source tools/tap.sh" >> "$out/bad"
done < "$out/runners"
[ -s "$out/runners" ] && [ ! -s "$out/bad" ]
result $? "every suite runner the fragments name sources tools/tap.sh ($(wc -l < "$out/runners") scripts)" \
	"$out/bad" "$out/runners"

# 2. TAP result lines printed by hand
git ls-files '*.sh' | grep -v -e '^tools/tap\.sh$' |
	xargs grep -n -E '(echo|printf) +"(not )?ok ' > "$out/own" 2>/dev/null
[ ! -s "$out/own" ]
result $? "no shell script but tools/tap.sh prints an \"ok N\" or \"not ok N\" line itself" "$out/own"

# 3. the VM booted for a suite only by vm-suite.sh
git ls-files '*.sh' '*.mk' | grep -v -e '^selftests/vm/' -e '^selftests/debug/' -e '^bench/' \
	-e '^tests/packages/' -e '^apps/bert/bert\.mk$' |
	xargs grep -n -E '^[^#]*run-vm\.sh"? +(-|\$)' 2>/dev/null | grep -v -E ':[0-9]+:\s*echo ' > "$out/vm"
[ ! -s "$out/vm" ]
result $? "every VM suite boots the VM through selftests/vm/vm-suite.sh" "$out/vm"
tap_end
