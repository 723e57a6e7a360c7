#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-pytest.sh - run one pytest file of libnpushm/tests and print its TAP
# (written by conftest.py), pytest's own output as comments; exit status
# pytest's. run-tests.sh runs test_cli.py and test_python.py through it.
#
#   run-pytest.sh test_cli.py
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d /tmp/npushm-pytest.XXXXXX)
trap 'rm -rf "$out"' EXIT
NPUSHM_TAP_OUT="$out/tap" /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs "$here/$1" > "$out/log" 2>&1
rc=$?
sed 's/^/# /' "$out/log" | tail -30
if [ -s "$out/tap" ]; then
	cat "$out/tap"
else
	echo "not ok 1 - $1: pytest ran no test (exit status $rc)"
	echo "1..1"
fi
exit $rc
