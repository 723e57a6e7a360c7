#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# static-checks.sh - the static checks as TAP: the module's (checkpatch.pl
# --strict on kmod/, the selftests' module in kmod/test/ too, and the UAPI
# header, a W=1 build and a C=2 (sparse) build, each of which must print no
# warning at all), then the installed static archives' symbols: each ARCHIVE
# defines no global but its shared library's public names
# (tools/check-archive-exports.sh), and a program defining internal names of
# theirs links with all of them.
#
#   static-checks.sh [ARCHIVE...]    (make check-static: every archive make install installs)
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

for a in "$@"; do
	b=${a##*/}
	"$here/tools/check-archive-exports.sh" "$a" > "$out/$b.log" 2>&1
	result $? "$b defines only the public names of ${b%.a}.so (internal ones local)" "$out/$b.log"
done

# internal names of each library (libnpushm, libnptensor, libnpccl, libnpbert,
# libnpllama) defined again by a program that links every archive: no clash
if [ $# -gt 0 ]; then
	cat > "$out/clash.c" <<'EOF2'
#include <string.h>
int npi_alloc_node, npt_any_negative, block_range, npb_fail, npl_fail;
const char *npushm_strerror(int), *npt_strerror(int), *npccl_strerror(int),
	*npbert_strerror(int), *npllama_strerror(int);
int main(void)
{
	return strcmp(npushm_strerror(0), "") == 0 || strcmp(npt_strerror(0), "") == 0 ||
	       strcmp(npccl_strerror(0), "") == 0 || strcmp(npbert_strerror(0), "") == 0 ||
	       strcmp(npllama_strerror(0), "") == 0;
}
EOF2
	{ cc -std=gnu11 -o "$out/clash" "$out/clash.c" -L"$BUILD/lib" -Wl,-Bstatic -lnpllama \
		-lnpbert -lnptensor -lnpccl -lnpushm -Wl,-Bdynamic -lnl-genl-3 -lnl-3 -ljson-c \
		-lxxhash -lopenblas -lmvec -lm -lpthread &&
	  ! ldd "$out/clash" | grep 'libnp' && "$out/clash"; } > "$out/clash.log" 2>&1
	result $? "a program defining internal names of the libraries links their archives and runs" \
		"$out/clash.log"
fi
tap_end
