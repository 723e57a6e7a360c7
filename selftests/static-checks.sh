#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# static-checks.sh - the module's static checks as TAP: checkpatch.pl
# --strict on kmod/ (the selftests' module in kmod/test/ too) and the UAPI
# header, a W=1 build and a C=2 (sparse) build, each of which must print no
# warning at all.
#
# Needs tools/setup.sh (linux-source extract, sparse, the kernel headers).
here=$(cd "$(dirname "$0")/.." && pwd)
srcs=$(ls "$here"/kmod/*.c "$here"/kmod/*.h "$here"/kmod/test/*.c "$here"/kmod/test/*.h | grep -v '\.mod\.c$')
BUILD=${BUILD:-$here/build}
KDIR=${KDIR:?KDIR must name the kernel build tree}
out=$BUILD/static
mkdir -p "$out"
. "$here/tools/tap.sh"

cp="$BUILD/linux-source/scripts/checkpatch.pl"
if [ -x "$cp" ] || [ -f "$cp" ]; then
	(cd "$out" && perl "$cp" --strict --no-tree --terse --show-types \
		--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG \
		-f $srcs "$here"/include/uapi/linux/npushm.h) > "$out/checkpatch.log" 2>&1
	grep -qE ': (ERROR|WARNING|CHECK):' "$out/checkpatch.log"; st=$((1 - $?))
	result $st "checkpatch.pl --strict kmod/ include/uapi/linux/npushm.h" "$out/checkpatch.log"
else
	result 1 "checkpatch.pl missing at $cp (run make setup)"
fi

# Spelling check for the SPDX tags checkpatch skipped above.
bad=$(grep -L "SPDX-License-Identifier" $srcs "$here"/include/uapi/linux/npushm.h)
[ -z "$bad" ]; st=$?
echo "$bad" > "$out/spdx.log"
result $st "every kmod/ and UAPI file has an SPDX tag" "$out/spdx.log"

cat > "$out/uapi.c" <<'EOF2'
#include <linux/npushm.h>
#include "npushm_test_uapi.h"
int main(void)
{
	return sizeof(struct npushm_query) != NPUSHM_QUERY_SIZE_VER0 ||
	       sizeof(struct npushm_alloc) != NPUSHM_ALLOC_SIZE_VER0 ||
	       sizeof(struct npushm_seal) != NPUSHM_SEAL_SIZE_VER0 ||
	       sizeof(struct npushm_export) != NPUSHM_EXPORT_SIZE_VER0 ||
	       sizeof(struct npushm_region_info) != NPUSHM_INFO_SIZE_VER1 ||
	       sizeof(struct npushm_watch_open) != NPUSHM_WATCH_OPEN_SIZE_VER0 ||
	       sizeof(struct npushm_watch_range) != NPUSHM_WATCH_RANGE_SIZE_VER0 ||
	       sizeof(struct npushm_watch_del) != NPUSHM_WATCH_DEL_SIZE_VER0 ||
	       sizeof(struct npushm_watch_event) != 16 ||
	       sizeof(struct npushm_test_import) != 72;
}
EOF2
inc="-I$here/include/uapi -I$here/kmod/test"
{ gcc -std=c99 -Wall -Wextra -pedantic -Werror $inc -o "$out/uapi-c" "$out/uapi.c" &&
  "$out/uapi-c" &&
  g++ -x c++ -std=c++11 -Wall -Wextra -Werror $inc -o "$out/uapi-cxx" "$out/uapi.c" &&
  "$out/uapi-cxx"; } > "$out/uapi.log" 2>&1
result $? "the UAPI headers (npushm.h, the test module's) are self-contained C99 and C++11 with the documented sizes" \
	"$out/uapi.log"

# A full build in a fresh copy of the module's sources, so that the
# checkout's kmod/npushm.ko, which the VM suites load meanwhile (make check
# runs two suites at a time), is left alone.
src=$out/kmod-src
rm -rf "$src" && mkdir -p "$src"
(cd "$here" && tar -cf - --exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' \
	--exclude='.*.cmd' --exclude='modules.order' --exclude='Module.symvers' Kbuild kmod include) |
	tar -xf - -C "$src"
make -C "$KDIR" M="$src" W=1 modules > "$out/w1.log" 2>&1; st=$?
grep -qE 'warning:|error:' "$out/w1.log" && st=1
result $st "make W=1 builds npushm.ko with no warning" "$out/w1.log"

make -C "$KDIR" M="$src" C=2 modules > "$out/sparse.log" 2>&1; st=$?
grep -E '^.*\.[ch]:[0-9]+:[0-9]+: (warning|error):' "$out/sparse.log" | grep -q . && st=1
result $st "make C=2 (sparse) reports nothing" "$out/sparse.log"
tap_end
