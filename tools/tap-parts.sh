# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# tap-parts.sh - sourced by the suite runners that fold several TAP programs
# into one plan: part NAME COMMAND... runs COMMAND, prints its TAP renumbered
# after the tests so far (tools/tap-part; a crash or a non-zero exit with no
# failed test is a failure of its own) and adds to $count and $failed.
# The runner sets root (the top of the tree) and may set PART_HINT (a
# sentence tap-part prints with a failure) and PART_TIMES=1 (the time each
# part took, as a comment). The runner's exit trap removes $tap_parts_tmp.
count=0
failed=0
tap_parts_tmp=$(mktemp -d /tmp/npushm-parts.XXXXXX)

part() {
	_name=$1
	shift
	_t0=$(date +%s)
	"$@" > "$tap_parts_tmp/out" 2>&1
	_rc=$?
	[ "${PART_TIMES:-0}" = 1 ] && echo "# part $_name: $(($(date +%s) - _t0)) s"
	"$root/tools/tap-part" "$count" "$_name" "$_rc" "$tap_parts_tmp/state" ${PART_HINT:+"$PART_HINT"} \
		< "$tap_parts_tmp/out"
	set -- $(cat "$tap_parts_tmp/state")
	count=$((count + $1))
	failed=$((failed + $2))
}
