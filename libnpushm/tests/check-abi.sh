#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# check-abi.sh - TAP checks of the public surface: npushm.h compiles on its
# own as strict C99 and C++11 (before and after the UAPI header), and
# libnpushm.so exports exactly the npushm_* functions, versioned NPUSHM_1.0
# (npushm.h), NPUSHM_1.1 (npushm_rdma.h), NPUSHM_1.2 (npushm_watch.h),
# NPUSHM_1.4 (npushm_space.h), NPUSHM_1.5 (npushm_model_node, npushm.h),
# NPUSHM_1.6 (npushm_cluster.h), NPUSHM_1.7 (npushm_model_accept_packed_only,
# npushm.h) and NPUSHM_1.8 (npushm_model_owner_uid, npushm.h); the headers of
# 1.1, 1.2, 1.4 and 1.6 compile on their own too.
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/.." && pwd)
BUILD=${BUILD:-$root/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$root/tools/tap.sh"
printf '#include <npushm.h>\n#include <linux/npushm.h>\nint main(void) { npushm_region_info_t i; return (int)sizeof(i) > 0 ? NPUSHM_OK : 1; }\n' > "$tmp/a.c"
printf '#include <linux/npushm.h>\n#include <npushm.h>\nint f(void) { return NPUSHM_NAME_MAX; }\n' > "$tmp/b.c"
gcc -std=c99 -Wall -Wextra -pedantic -Werror -I"$here/include" -I"$root/include/uapi" -c "$tmp/a.c" -o "$tmp/a.o" 2> "$tmp/log" &&
	gcc -std=c99 -Wall -Wextra -pedantic -Werror -I"$here/include" -I"$root/include/uapi" -c "$tmp/b.c" -o "$tmp/b.o" 2>> "$tmp/log" &&
	g++ -x c++ -std=c++11 -Wall -Wextra -Werror -I"$here/include" -I"$root/include/uapi" -c "$tmp/a.c" -o "$tmp/c.o" 2>> "$tmp/log"
result $? "npushm.h is self-contained C99 and C++11, with or next to the UAPI header" "$tmp/log"
syms=$(nm -D --defined-only "$BUILD/lib/libnpushm.so" | awk '$2 == "T" { print $3 }')
bad=$(echo "$syms" | grep -v '^npushm_[a-z_]*@@NPUSHM_1\.[0-8]$')
echo "unexpected exports: $bad" > "$tmp/exports.log"
[ -n "$syms" ] && [ -z "$bad" ]
result $? "libnpushm.so exports only npushm_* functions, versioned NPUSHM_1.0 to 1.8 ($(echo "$syms" | wc -l) of them)" \
	"$tmp/exports.log"
missing=""
for f in $(grep -o '^NPUSHM_API [^(]*(' "$here/include/npushm.h" | sed 's/.*[ *]\(npushm_[a-z_]*\)(/\1/'); do
	echo "$syms" | grep -q "^$f@@NPUSHM_1\.[03578]$" || missing="$missing $f"
done
for f in $(grep -o '^NPUSHM_API [^(]*(' "$here/include/npushm_rdma.h" | sed 's/.*[ *]\(npushm_[a-z_]*\)(/\1/'); do
	echo "$syms" | grep -q "^$f@@NPUSHM_1\.1$" || missing="$missing $f"
done
for f in $(grep -o '^NPUSHM_API [^(]*(' "$here/include/npushm_watch.h" | sed 's/.*[ *]\(npushm_[a-z_]*\)(/\1/'); do
	echo "$syms" | grep -q "^$f@@NPUSHM_1\.2$" || missing="$missing $f"
done
for f in $(grep -o '^NPUSHM_API [^(]*(' "$here/include/npushm_space.h" | sed 's/.*[ *]\(npushm_[a-z_]*\)(/\1/'); do
	echo "$syms" | grep -q "^$f@@NPUSHM_1\.4$" || missing="$missing $f"
done
for f in $(grep -o '^NPUSHM_API [^(]*(' "$here/include/npushm_cluster.h" | sed 's/.*[ *]\(npushm_[a-z_]*\)(/\1/'); do
	echo "$syms" | grep -q "^$f@@NPUSHM_1\.6$" || missing="$missing $f"
done
echo "declared but not exported:$missing" > "$tmp/missing.log"
[ -z "$missing" ]
result $? "every function declared NPUSHM_API in npushm.h (NPUSHM_1.0, the layouts' 1.3, the per-node copies' 1.5, packed-only 1.7, the model's owner 1.8), npushm_rdma.h (NPUSHM_1.1), npushm_watch.h (NPUSHM_1.2), npushm_space.h (NPUSHM_1.4) and npushm_cluster.h (NPUSHM_1.6) is exported" \
	"$tmp/missing.log"
printf '#include <npushm_rdma.h>\nint main(void) { npushm_mr_info_t i; return (int)sizeof(i) > 0 ? NPUSHM_OK : 1; }\n' > "$tmp/d.c"
gcc -std=c99 -Wall -Wextra -pedantic -Werror -I"$here/include" -c "$tmp/d.c" -o "$tmp/d.o" 2> "$tmp/log" &&
	g++ -x c++ -std=c++11 -Wall -Wextra -Werror -I"$here/include" -c "$tmp/d.c" -o "$tmp/e.o" 2>> "$tmp/log" &&
	! nm -D "$BUILD/lib/libnpushm.so" | grep -q ' U ibv_' && ! readelf -d "$BUILD/lib/libnpushm.so" | grep -q 'libibverbs'
result $? "npushm_rdma.h is self-contained C99 and C++11 (no verbs.h needed); libnpushm.so does not link libibverbs" "$tmp/log"
printf '#include <npushm_watch.h>\nint main(void) { npushm_watch_event_t e = { 1, 2 }; return e.id == 1 ? NPUSHM_OK : 1; }\n' > "$tmp/f.c"
gcc -std=c99 -Wall -Wextra -pedantic -Werror -I"$here/include" -c "$tmp/f.c" -o "$tmp/f.o" 2> "$tmp/log" &&
	g++ -x c++ -std=c++11 -Wall -Wextra -Werror -I"$here/include" -c "$tmp/f.c" -o "$tmp/g.o" 2>> "$tmp/log" &&
	{ echo '#include <linux/npushm.h>'; cat "$tmp/f.c"; } > "$tmp/h.c" &&
	gcc -std=c99 -Wall -Wextra -pedantic -Werror -I"$here/include" -I"$root/include/uapi" -c "$tmp/h.c" -o "$tmp/h.o" 2>> "$tmp/log"
result $? "npushm_watch.h is self-contained C99 and C++11 (no UAPI header needed), and compiles next to it" "$tmp/log"
printf '#include <npushm_space.h>\nint main(void) { return NPUSHM_SPACE_READ == 1 ? NPUSHM_OK : 1; }\n' > "$tmp/s.c"
gcc -std=c99 -Wall -Wextra -pedantic -Werror -I"$here/include" -c "$tmp/s.c" -o "$tmp/s.o" 2> "$tmp/log" &&
	g++ -x c++ -std=c++11 -Wall -Wextra -Werror -I"$here/include" -c "$tmp/s.c" -o "$tmp/t.o" 2>> "$tmp/log" &&
	{ echo '#include <linux/npushm.h>'; cat "$tmp/s.c"; } > "$tmp/u.c" &&
	gcc -std=c99 -Wall -Wextra -pedantic -Werror -I"$here/include" -I"$root/include/uapi" -c "$tmp/u.c" -o "$tmp/u.o" 2>> "$tmp/log"
result $? "npushm_space.h is self-contained C99 and C++11 (no UAPI header needed), and compiles next to it" "$tmp/log"
printf '#include <npushm_cluster.h>\nint main(void) { npushm_cluster_result_t r; r.cause = NPUSHM_CLUSTER_OK; return (int)r.cause; }\n' > "$tmp/k.c"
gcc -std=c99 -Wall -Wextra -pedantic -Werror -I"$here/include" -c "$tmp/k.c" -o "$tmp/k.o" 2> "$tmp/log" &&
	g++ -x c++ -std=c++11 -Wall -Wextra -Werror -I"$here/include" -c "$tmp/k.c" -o "$tmp/l.o" 2>> "$tmp/log"
result $? "npushm_cluster.h is self-contained C99 and C++11" "$tmp/log"
tap_end
