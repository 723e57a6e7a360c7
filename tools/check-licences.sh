#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# check-licences.sh - the licensing checks as TAP: `reuse lint` (every file
# has a licence and a copyright, through its own tags or .reuse/dep5, and every
# licence used has its text in LICENSES/), and tools/spdx-tag --check (each
# tracked file carries the licence its path calls for: GPL-2.0-only for the
# module and its tests, the syscall note on the UAPI header, MIT elsewhere).
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 1
BUILD=${BUILD:-$here/build}
out=$BUILD/licences
mkdir -p "$out"
echo "1..2"
fail=0
if ! command -v reuse >/dev/null; then
	echo "not ok 1 - reuse lint (the reuse command is missing: run make setup)"
	fail=1
elif reuse lint > "$out/reuse-lint.log" 2>&1; then
	echo "ok 1 - reuse lint: the tree is REUSE compliant"
else
	echo "not ok 1 - reuse lint (log: $out/reuse-lint.log)"
	sed -n '/^# MISSING/,$p' "$out/reuse-lint.log" | sed 's/^/#   /' | head -60
	fail=1
fi
git ls-files -z | xargs -0 tools/spdx-tag --check > "$out/spdx-tag.log" 2>&1
if [ $? = 0 ]; then
	echo "ok 2 - every tracked source file carries the licence its path calls for"
else
	echo "not ok 2 - files without the right SPDX tags (fix: tools/spdx-tag FILE...; log: $out/spdx-tag.log)"
	sed 's/^/#   /' "$out/spdx-tag.log" | head -60
	fail=1
fi
exit $fail
