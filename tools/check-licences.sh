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
. "$here/tools/tap.sh"
if ! command -v reuse >/dev/null; then
	result 1 "reuse lint (the reuse command is missing: run make setup)"
else
	reuse lint > "$out/reuse-lint.log" 2>&1
	st=$?
	# on failure, the part of the report that names the files
	sed -n '/^# MISSING/,$p' "$out/reuse-lint.log" > "$out/reuse-missing.log"
	result $st "reuse lint: the tree is REUSE compliant" "$out/reuse-missing.log"
fi
git ls-files -z | xargs -0 tools/spdx-tag --check > "$out/spdx-tag.log" 2>&1
result $? "every tracked source file carries the licence its path calls for (fix: tools/spdx-tag FILE...)" \
	"$out/spdx-tag.log"
tap_end
