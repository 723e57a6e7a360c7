#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# check-layers.sh - libnptensor's layering, read from its object files (TAP).
#
#   check-layers.sh OBJDIR      (OBJDIR = build/obj/tensor)
#
# The sources are in layers, by folder: graph building (src/*.c), sched/,
# kernels/, backend/, core/. An object may use a symbol defined by an object
# of its own layer or of one below, never above: kernels never evaluate or
# build graph nodes, the scheduler never calls the graph-building API. Inside
# a layer the files call each other without a loop. Each rule is one result;
# a broken one lists the calls that break it (object -> object: symbol).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tools/tap.sh"
objdir=${1:?usage: check-layers.sh OBJDIR}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/npt-layers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# layer rank of an object, from its folder: 0 = top ... 4 = core
rank() {
	case $1 in
	sched/*) echo 1 ;;
	kernels/*) echo 2 ;;
	backend/*) echo 3 ;;
	core/*) echo 4 ;;
	*/*) echo 9 ;;
	*) echo 0 ;;
	esac
}

objs=$(cd "$objdir" && find . -name '*.o' | sed 's|^\./||' | sort)
if [ -z "$objs" ]; then
	result 1 "object files of libnptensor found in $objdir"
	tap_end
	exit
fi
for o in $objs; do
	nm "$objdir/$o" | awk -v f="$o" '$2 ~ /^[TDBR]$/ { print $3, f }'
done | LC_ALL=C sort > "$tmp/defs"
for o in $objs; do
	nm -u "$objdir/$o" | awk -v f="$o" '{ print $2, f }'
done | LC_ALL=C sort > "$tmp/uses"
# calls between objects: caller callee symbol
LC_ALL=C join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 { print $2, $3, $1 }' | sort -u > "$tmp/calls"
while read -r from to sym; do
	echo "$(rank "$from") $(rank "$to") $from $to $sym"
done < "$tmp/calls" > "$tmp/ranked"

unknown=$(awk '$1 == 9 || $2 == 9 { print $3 }' "$tmp/ranked" | sort -u)
[ -z "$unknown" ]
result $? "every object is in a known layer${unknown:+ (not: $unknown)}"

for layer in sched kernels backend core; do
	r=$(rank "$layer/x")
	awk -v r="$r" '$1 == r && $2 < r { print "#   " $3 " -> " $4 ": " $5 }' "$tmp/ranked" \
		> "$tmp/up.$layer"
	[ ! -s "$tmp/up.$layer" ]
	st=$?
	result $st "$layer/ uses nothing of a layer above it"
	[ $st = 0 ] || cat "$tmp/up.$layer"
done

# loops inside one layer (and across the graph-building files)
awk '$1 == $2 { print $3, $4 }' "$tmp/ranked" | sort -u > "$tmp/same"
if tsort "$tmp/same" > /dev/null 2> "$tmp/loop"; then
	result 0 "no call loop between files of one layer"
else
	result 1 "no call loop between files of one layer"
	sed 's/^/#   /' "$tmp/loop"
fi
tap_end
