#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# check-exports.sh - libnptensor's dynamic symbols against nptensor.h (TAP).
#
#   check-exports.sh LIBRARY    (LIBRARY = build/lib/libnptensor.so)
#
# Every defined dynamic symbol is an npt_* function of the header, versioned
# NPTENSOR_1*: nothing the version script's npt_* pattern catches by accident
# (the .resolver symbols GCC emits for target_clones, for one); and every
# function the header declares is exported.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tools/tap.sh"
lib=${1:?usage: check-exports.sh LIBRARY}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/npt-exports.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sort > "$tmp/exported"
sed -n 's/^NPT_API [^(]*[ *]\(npt_[a-z0-9_]*\)(.*/\1/p' "$root/tensor/include/nptensor.h" |
	sort -u > "$tmp/declared"
grep -v '^npt_[a-z0-9_]*@@*NPTENSOR_1[.0-9]*$' "$tmp/exported" > "$tmp/unexpected"
sed 's/@.*//' "$tmp/exported" | sort -u | comm -13 - "$tmp/declared" > "$tmp/missing"
sed 's/@.*//' "$tmp/exported" | sort -u | comm -23 - "$tmp/declared" >> "$tmp/unexpected"
[ -s "$tmp/exported" ] && [ ! -s "$tmp/unexpected" ]
result $? "libnptensor.so exports only the functions of nptensor.h, versioned NPTENSOR_1*" \
	"$tmp/unexpected"
[ -s "$tmp/declared" ] && [ ! -s "$tmp/missing" ]
result $? "every function nptensor.h declares ($(wc -l < "$tmp/declared")) is exported" "$tmp/missing"
tap_end
