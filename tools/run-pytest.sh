#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-pytest.sh - run one pytest file or directory and print its TAP (written
# by tools/pytest_tap.py, which the directory's conftest.py imports), pytest's
# own output as comments before it; exit status pytest's.
#
#   run-pytest.sh PATH [PYTEST ARGS...]
path=${1:?usage: run-pytest.sh PATH [PYTEST ARGS...]}
shift
out=$(mktemp -d /tmp/npushm-pytest.XXXXXX)
trap 'rm -rf "$out"' EXIT
NPUSHM_TAP_OUT="$out/tap" /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs "$path" "$@" > "$out/log" 2>&1
rc=$?
sed 's/^/# /' "$out/log" | tail -30
if [ -s "$out/tap" ]; then
	cat "$out/tap"
else
	. "$(dirname "$0")/tap.sh"
	result 1 "${path##*/}: pytest ran no test (exit status $rc)"
	tap_end
fi
exit $rc
