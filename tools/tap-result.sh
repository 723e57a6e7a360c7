# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# tap-result.sh - sourced by the suite scripts that print one TAP line per
# check: result STATUS DESCRIPTION [LOG] prints "ok N - ..." for STATUS 0,
# else "not ok N - ... (log: LOG)" with the end of LOG as comments, and sets
# fail=1. The script sets n=0 and fail=0 first.
result() {	# result STATUS DESCRIPTION [LOG]
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2${3:+ (log: $3)}"
		[ -n "${3:-}" ] && [ -f "$3" ] && sed 's/^/#   /' "$3" | tail -25
		fail=1
	fi
}
