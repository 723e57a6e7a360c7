#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# vm-suite.sh - the runner of every test suite that runs in the test VM: boots
# it (run-vm.sh), loads the freshly built kmod/npushm.ko (with-module.sh; not
# with --no-module, for a suite that loads the module itself), runs COMMAND
# there with its output going to NAME.tap in the VM's result share, prints
# that output and exits with the VM run's status (non-zero also on a kernel
# warning, a panic or the timeout: tools/tap-summary counts a non-zero status
# without a failing test as one failure). When the module is not built it
# prints one SKIP instead and exits 0.
#
#   vm-suite.sh NAME [-m MEM] [-t SECONDS] [--no-module] -- COMMAND [ARGS...]
#
# Everything goes to $BUILD/vm/NAME: NAME.tap, console.log, dmesg.txt.
# Environment: as run-vm.sh (VM_APPEND, VM_SMP, NPUSHM_* passed on, ...).
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$root/build}
export BUILD
name=${1:?usage: vm-suite.sh NAME [-m MEM] [-t SECONDS] [--no-module] -- COMMAND [ARGS...]}
shift
mem=2G
tmo=600
wrap=selftests/vm/with-module.sh
while [ $# -gt 0 ]; do
	case "$1" in
	-m) mem=$2; shift 2 ;;
	-t) tmo=$2; shift 2 ;;
	--no-module) wrap=; shift ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "vm-suite.sh: no command given" >&2; exit 2; }
cd "$root" || exit 1
if [ ! -f kmod/npushm.ko ]; then
	. tools/tap.sh
	tap_skip "$name in the VM" "kmod/npushm.ko is not built (make modules)"
	tap_end
	exit 0
fi
out=$BUILD/vm/$name
mkdir -p "$out"
rm -f "$out/$name.tap"
# shellcheck disable=SC2016
VM_QUIET=1 selftests/vm/run-vm.sh -m "$mem" -o "$out" -t "$tmo" -- \
	$wrap sh -c 'o=$1; shift; "$@" > "$o" 2>&1' sh "$out/$name.tap" "$@"
rc=$?
cat "$out/$name.tap" 2>/dev/null || echo "# no output came back from the VM (see $out/console.log)"
[ "$rc" = 0 ] || echo "# the VM run ended with status $rc (see $out/console.log)"
exit $rc
