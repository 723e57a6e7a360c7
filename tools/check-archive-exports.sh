#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# check-archive-exports.sh - a static archive's global symbols against its
# shared library's exports.
#
#   check-archive-exports.sh ARCHIVE    (e.g. build/lib/libnpllama.a)
#
# The public names of libX.a are those libX.so (beside it) exports, as its
# version script lets through. Every global the archive defines must be one
# of them: any other (an internal function such as npl_fail, a .resolver of
# a target_clones function) would clash with a program's own name of that
# spelling. And every public name must be defined by the archive. Prints
# what is wrong, one line each; exit status 0 when nothing is.
set -u
a=${1:?usage: check-archive-exports.sh ARCHIVE}
so=${a%.a}.so
for f in "$a" "$so"; do
	[ -f "$f" ] || { echo "missing: $f"; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/npushm-archive.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# the shared library's exports, without their version (nor the version nodes)
nm -D --defined-only "$so" | awk 'NF == 3 && $2 != "A" { sub(/@.*/, "", $3); print $3 }' |
	sort -u > "$tmp/public" || exit 1
nm -g --defined-only "$a" | awk 'NF == 3 { print $3 }' | sort -u > "$tmp/archive" || exit 1
st=0
if [ ! -s "$tmp/public" ]; then
	echo "$so exports nothing"
	st=1
fi
comm -23 "$tmp/archive" "$tmp/public" | sed "s|^|${a##*/} exports a non-public global: |"
comm -13 "$tmp/archive" "$tmp/public" | sed "s|^|${a##*/} lacks a public function of ${so##*/}: |"
[ -z "$(comm -3 "$tmp/archive" "$tmp/public")" ] || st=1
exit $st
