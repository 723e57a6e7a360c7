# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# tap.sh - the TAP library of the suite runners (sourced; POSIX sh). Every
# runner prints one TAP stream: results numbered from 1 across everything it
# runs, then (or before) the plan; tools/run-suite keeps it and
# tools/tap-summary counts it.
#
#   . "$root/tools/tap.sh"
#   result STATUS DESCRIPTION [LOG...]  one result: passes when STATUS is 0 (as $?);
#                                       on failure the end of each LOG as comments
#   tap_skip DESCRIPTION REASON         one result, skipped
#   part NAME CMD...                    run CMD (output captured) and fold its TAP in
#   part_within NAME SECONDS CMD...     the same under timeout(1): killed after SECONDS
#                                       (a hang fails the part, "timed out after N s")
#   tap_fold PREFIX RC NOTE < OUTPUT    fold a program's TAP output already captured
#                                       (from a file: in a pipe it would run in a
#                                       subshell and the counters would be lost)
#   tap_end                             print the plan "1..N"; status 1 if any failed
#
# Folding renumbers the program's "ok N" / "not ok N" lines after the results
# so far, prefixes their descriptions with "PREFIX: " (none when PREFIX is
# empty), keeps directives ("# SKIP ..."), drops its plan and turns every other
# line into a comment. It adds one failing result when the program printed
# fewer results than its plan, exited with status RC != 0 without a failing
# result (NOTE is appended, e.g. "timed out after 60 s"), or printed none.
# Counters: n (results so far) and failed (failing results so far).
# Settings: TAP_PART_HINT (a sentence added to a part's failure note),
# TAP_PART_TIMES=1 (part prints the seconds each part took, as a comment).
n=${n:-0}
failed=${failed:-0}

result() {
	_st=$1 _desc=$2
	shift 2
	n=$((n + 1))
	if [ "$_st" = 0 ]; then
		echo "ok $n - $_desc"
		return 0
	fi
	failed=$((failed + 1))
	echo "not ok $n - $_desc${1:+ (log: $*)}"
	for _log; do
		[ -f "$_log" ] && sed 's/^/#   /' "$_log" | tail -25
	done
	return 0
}

tap_skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

tap_fold() {
	_state=$(mktemp "${TMPDIR:-/tmp}/npushm-tap.XXXXXX") || return 1
	awk -v base="$n" -v pre="$1" -v rc="$2" -v state="$_state" -v note="${3:+ ($3)}" '
		function emit(okay, text) {
			k++
			if (!okay)
				f++
			printf "%s %d - %s%s\n", okay ? "ok" : "not ok", base + k, pre == "" ? "" : pre ": ", text
		}
		/^(ok|not ok) [0-9]+/ {
			okay = ($1 == "ok")
			line = $0
			sub(/^(not )?ok [0-9]+ */, "", line)
			sub(/^- */, "", line)
			emit(okay, line)
			got++
			next
		}
		/^1\.\.[0-9]+/ { plan = substr($0, 4) + 0; next }
		/^#/ { print; next }
		{ print "# " $0 }
		END {
			if (got < plan)
				emit(0, "stopped after " got " of " plan " tests (exit status " rc note ")")
			else if (rc != 0 && f == 0)
				emit(0, "exited with status " rc note " without a failing test")
			else if (got == 0)
				emit(0, "ran no test (exit status " rc note ")")
			printf "%d %d\n", k, f > state
		}'
	read -r _k _f < "$_state"
	rm -f "$_state"
	n=$((n + _k))
	failed=$((failed + _f))
}

part() {
	_name=$1
	shift
	_tap_part "$_name" "" "$@"
}

part_within() {
	_name=$1 _secs=$2
	shift 2
	_tap_part "$_name" "$_secs" "$@"
}

_tap_part() {	# _tap_part NAME SECONDS|"" CMD...
	_name=$1 _secs=$2
	shift 2
	_out=$(mktemp "${TMPDIR:-/tmp}/npushm-part.XXXXXX") || return 1
	_t0=$(date +%s)
	if [ -n "$_secs" ]; then
		timeout -k 5 "$_secs" "$@" > "$_out" 2>&1
	else
		"$@" > "$_out" 2>&1
	fi
	_rc=$?
	_note=${TAP_PART_HINT:-}
	[ -n "$_secs" ] && [ "$_rc" = 124 ] && _note="timed out after $_secs s${_note:+; $_note}"
	[ "${TAP_PART_TIMES:-0}" = 1 ] && echo "# part $_name: $(($(date +%s) - _t0)) s"
	tap_fold "$_name" "$_rc" "$_note" < "$_out"
	rm -f "$_out"
}

tap_end() {
	echo "1..$n"
	[ "$failed" = 0 ]
}
