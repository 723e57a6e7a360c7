#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-install-tests.sh - suite "install" (TAP): make install into a scratch
# DESTDIR, then use only what was installed there.
#
# The installed tree stands in for an installed system this way: programs are
# compiled with the flags `pkg-config` gives from the installed .pc files
# (PKG_CONFIG_PATH is the staged pkgconfig directory, PKG_CONFIG_SYSROOT_DIR
# the DESTDIR, the documented way to use a staged tree); they link and run
# with LD_LIBRARY_PATH set to the staged libdir only: on an installed system
# that directory (/usr/lib/<multiarch>) is in the linker's and the dynamic
# loader's default path, and the installed programs and libraries carry no
# RUNPATH, so both find them there by soname exactly as they would in /usr
# (the linker needs it for libnpccl's own libnpushm.so.1). Python gets
# PYTHONPATH = the staged dist-packages, which an installed system has on
# sys.path by default; the test checks that the package and its libraries
# were really taken from the staged tree (never from the checkout) and runs
# from a directory outside the checkout with NPUSHM_LIBDIR and BUILD unset.
#
#   run-install-tests.sh MAKE
set -u
MAKE=${1:-make}
root=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$root/build}
VERSION=$(cat "$root/VERSION")
work=$BUILD/install-test
D=$work/destdir
D2=$work/destdir-local
log=$work/log
rm -rf "$work"
mkdir -p "$work" "$log"
shmdir=$(mktemp -d /dev/shm/npushm-install-test.XXXXXX)
trap 'rm -rf "$shmdir"' EXIT
echo "1..31"

. "$root/tools/tap.sh"

# ---------------------------------------------------------------- install
$MAKE -C "$root" --no-print-directory install DESTDIR="$D" PREFIX=/usr > "$log/install.log" 2>&1
result $? "make install DESTDIR=... PREFIX=/usr" "$log/install.log"
$MAKE -C "$root" --no-print-directory -s install-list DESTDIR="$D" PREFIX=/usr > "$work/list" 2>"$log/list.log"
libdir=$(sed -n 's|^'"$D"'\(.*\)/libnpushm\.so\.1$|\1|p' "$work/list")
pkgdir=$(sed -n 's|^'"$D"'\(.*\)/npushm/__init__\.py$|\1|p' "$work/list")
bindir=/usr/bin
missing=$(while read -r f; do [ -e "$f" ] || [ -L "$f" ] || echo "$f"; done < "$work/list")
[ -n "$libdir" ] && [ -n "$pkgdir" ] && [ -z "$missing" ] && [ "$libdir" = "/usr/lib/$(cc -print-multiarch)" ]
result $? "every listed file is installed; libdir is the multiarch one ($libdir); Python in $pkgdir" \
	"$log/list.log"
[ -n "$missing" ] && echo "$missing" | sed 's/^/#   missing: /'

# ------------------------------------------------- libraries, as installed
for l in npushm nptensor npccl npbert npllama; do
	f=$D$libdir/lib$l.so
	{
		[ "$(readlink "$f")" = "lib$l.so.1" ] && [ "$(readlink "$f.1")" = "lib$l.so.1.0.0" ] &&
			[ -f "$f.1.0.0" ] && [ ! -L "$f.1.0.0" ] && [ -f "$D$libdir/lib$l.a" ] || echo "bad links"
		readelf -d "$f.1.0.0" | grep SONAME | grep -q "\[lib$l\.so\.1\]" || echo "SONAME is not lib$l.so.1"
		nm -D --defined-only "$f.1.0.0" | awk '$2 == "T" && $3 !~ /@@/ { print "unversioned export " $3 }'
	} > "$log/lib$l.log" 2>&1
	[ ! -s "$log/lib$l.log" ]
	result $? "lib$l.so -> lib$l.so.1 -> lib$l.so.1.0.0 (SONAME lib$l.so.1, every export versioned), lib$l.a" \
		"$log/lib$l.log"
done

: > "$log/runpath.log"
find "$D" -type f | while read -r f; do
	if readelf -h "$f" >/dev/null 2>&1 && readelf -d "$f" 2>/dev/null | grep -E 'R(UN)?PATH'; then
		echo "$f"
	fi
done > "$log/runpath.log" 2>&1
[ ! -s "$log/runpath.log" ]
result $? "no installed program or library has a RUNPATH or RPATH" "$log/runpath.log"

{ grep -rlF "$root" "$D"; grep -rlF "$BUILD" "$D"; } > "$log/buildpath.log" 2>&1
[ ! -s "$log/buildpath.log" ]
result $? "no installed file contains the source or build directory" "$log/buildpath.log"

# --------------------------- the build tree's libraries find each other
# A program linked against build/lib with nothing but -L and a (RUNPATH)
# -rpath to it starts: each library there that needs another (libnpccl,
# libnpbert and libnpllama need libnpushm.so.1) carries its own $ORIGIN
# RUNPATH, since the program's RUNPATH is not used for its libraries'
# dependencies.
for l in npccl npbert npllama; do
	{
		env -u LD_LIBRARY_PATH cc -std=gnu11 -Wall -Werror -I"$root/libnpushm/include" \
			-I"$root/ccl/include" -I"$root/apps/bert/include" -I"$root/apps/llama/include" \
			-o "$work/build_$l" \
			"$root/tests/install/use_$l.c" -L"$BUILD/lib" -l$l -Wl,--enable-new-dtags,-rpath,"$BUILD/lib" &&
		readelf -d "$BUILD/lib/lib$l.so" | grep -F 'RUNPATH' | grep -F '[$ORIGIN]' &&
		(cd /tmp && env -u LD_LIBRARY_PATH NPUSHM_BACKEND=posix NPUSHM_SHM_DIR="$shmdir" "$work/build_$l")
	} > "$log/build_$l.log" 2>&1
	result $? "a program linked against build/lib with only -L and -rpath starts (lib$l.so finds its siblings by its \$ORIGIN RUNPATH)" \
		"$log/build_$l.log"
done

# ------------------------------------- C programs built from the installed tree
export PKG_CONFIG_PATH="$D$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D"
unset NPUSHM_LIBDIR
export NPUSHM_BACKEND=posix NPUSHM_SHM_DIR="$shmdir"
for l in npushm nptensor npccl npbert npllama; do
	{
		flags=$(pkg-config --cflags --libs "$l") && echo "cc use_$l.c $flags" &&
		LD_LIBRARY_PATH="$D$libdir" cc -std=gnu11 -Wall -Werror -o "$work/use_$l" \
			"$root/tests/install/use_$l.c" $flags &&
		out=$(cd /tmp && LD_LIBRARY_PATH="$D$libdir" "$work/use_$l") && echo "$out" &&
		LD_LIBRARY_PATH="$D$libdir" ldd "$work/use_$l" | grep "lib$l\.so\.1 => $D$libdir/lib$l\.so\.1 " &&
		# the installed libnptensor finds Debian's oneDNN (libdnnl2) for its GEMM
		{ [ "$l" != nptensor ] || echo "$out" | grep -q '^gemm backend: onednn '; }
	} > "$log/use_$l.log" 2>&1
	result $? "a program built with \`pkg-config --cflags --libs $l\` links lib$l.so.1 from the installed tree and runs" \
		"$log/use_$l.log"
done
for l in npushm nptensor npccl npbert npllama; do
	{
		flags=$(pkg-config --static --cflags --libs "$l") && echo "cc -static use_$l.c $flags" &&
		cc -std=gnu11 -Wall -Werror -static -o "$work/use_${l}_static" "$root/tests/install/use_$l.c" \
			$flags 2>&1 | grep -v -E "warning: Using '[a-z]+' in statically linked|in function" ;
		[ -x "$work/use_${l}_static" ] && ! readelf -d "$work/use_${l}_static" | grep -q NEEDED &&
		(cd /tmp && "$work/use_${l}_static")
	} > "$log/use_${l}_static.log" 2>&1
	result $? "a fully static program built with \`pkg-config --static --cflags --libs $l\` runs" \
		"$log/use_${l}_static.log"
done
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR

# ------------------------------------------------ Python, as installed
(cd /tmp && env -u BUILD -u NPUSHM_LIBDIR PYTHONPATH="$D$pkgdir" LD_LIBRARY_PATH="$D$libdir" \
	/usr/bin/python3 "$root/tests/install/use_python.py" "$D" "$VERSION") > "$log/python.log" 2>&1
result $? "the installed Python package (its libraries by soname from the installed libdir) loads and attaches a model" \
	"$log/python.log"

# ---------------------------------------------- the command, as installed
printf 'npushm install test\n' > "$work/hashme"
{
	(cd /tmp && LD_LIBRARY_PATH="$D$libdir" "$D$bindir/npushm" --help) | grep -q '^usage: npushm' &&
	(cd /tmp && LD_LIBRARY_PATH="$D$libdir" "$D$bindir/npushm" hash "$work/hashme") &&
	(cd /tmp && LD_LIBRARY_PATH="$D$libdir" "$D$bindir/npushm" ls --json) | grep -q '"backend": *"posix"'
} > "$log/cli.log" 2>&1
result $? "the installed npushm runs: --help, hash, ls on the posix backend" "$log/cli.log"

# every installed program: --version says its name and the version, --help
# prints a usage on stdout; both exit 0 and write nothing to stderr
: > "$log/versions-cli.log"
nprog=0
for p in $(grep "^$D$bindir/" "$work/list"); do
	name=${p##*/}
	nprog=$((nprog + 1))
	v=$(cd /tmp && LD_LIBRARY_PATH="$D$libdir" "$p" --version 2>"$work/err") &&
		{ [ "$v" = "$name $VERSION" ] || [ "$v" = "$name (npushm) $VERSION" ]; } && [ ! -s "$work/err" ] ||
		echo "$name --version: '$v' $(cat "$work/err")" >> "$log/versions-cli.log"
	h=$(cd /tmp && LD_LIBRARY_PATH="$D$libdir" "$p" --help 2>"$work/err") &&
		echo "$h" | grep -q "^usage: $name" && [ ! -s "$work/err" ] ||
		echo "$name --help: exit or output wrong: $(echo "$h" | head -2) $(cat "$work/err")" >> "$log/versions-cli.log"
done
[ "$nprog" -ge 3 ] && [ ! -s "$log/versions-cli.log" ]
result $? "each of the $nprog installed programs answers --version (name and $VERSION) and --help (usage on stdout)" \
	"$log/versions-cli.log"

: > "$log/man.log"
for m in $(grep '/man/man[1-8]/' "$work/list"); do
	w=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$m" 2>&1 >/dev/null)
	[ -z "$w" ] || echo "${m##*/}: $w"
	grep -q '^\.SH NAME' "$m" || echo "${m##*/}: no NAME section"
done >> "$log/man.log"
nman=$(grep -c '/man/man[1-8]/' "$work/list")
for c in npushm npushm-load npushm-ls npushm-info npushm-rm npushm-hash npccl-perf npushm-bert npushm-llama \
	npccl-load; do
	grep -q "/man1/$c\.1$" "$work/list" || echo "no manual page for $c" >> "$log/man.log"
done
[ ! -s "$log/man.log" ]
result $? "$nman manual pages installed (every command has one), none with a groff warning" "$log/man.log"

bash -c '
	. /usr/share/bash-completion/bash_completion || exit 1
	. "$1" || exit 1
	npushm() { :; }
	comp() {
		COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		COMPREPLY=(); _npushm npushm "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		echo "${COMPREPLY[*]}"
	}
	set -- "$(comp npushm l)" "$(comp npushm ls --a)" "$(comp npushm --backend "")" "$(comp npushm load m.st --n)"
	echo "l: $1 | ls --a: $2 | --backend: $3 | load --n: $4"
	[ "$1" = "load ls" ] && [ "$2" = "--all" ] && [ "$3" = "auto kmod posix" ] && [ "$4" = "--name --no-dedup" ]
' sh "$D$(grep -o '/[^ ]*/bash-completion/completions/npushm$' "$work/list" | sed "s|^$D||")" \
	> "$log/completion.log" 2>&1
result $? "bash completion completes commands, options and option values" "$log/completion.log"

# -------------------------------------------------- versions agree
{
	echo "VERSION $VERSION"
	grep -h '__version__ = ' "$D$pkgdir/npushm/__init__.py"
	grep -h 'MODULE_VERSION' "$D"/usr/src/npushm-*/kmod/*.c
	grep -h '^Version:' "$D$libdir"/pkgconfig/*.pc
	grep -h '^PACKAGE_VERSION=' "$D"/usr/src/npushm-*/dkms.conf
	[ -f "$root/debian/changelog" ] && head -1 "$root/debian/changelog"
} > "$log/versions.log" 2>&1
bad=$(sed -n 's/^VERSION //p; s/.*__version__ = "\(.*\)"/\1/p; s/.*MODULE_VERSION("\(.*\)").*/\1/p;
	s/^Version: //p; s/^PACKAGE_VERSION="\(.*\)"/\1/p; s/^npushm (\([^-)]*\).*/\1/p' "$log/versions.log" |
	grep -v -x -F "$VERSION")
[ -z "$bad" ] && [ -d "$D/usr/src/npushm-$VERSION" ] && [ "$(grep -c . "$log/versions.log")" -ge 8 ]
result $? "one version ($VERSION) in VERSION, the Python package, MODULE_VERSION, the .pc files, dkms.conf, debian/changelog" \
	"$log/versions.log"

# pyproject.toml: the PEP 517 backend builds a wheel of the package (no network)
rm -rf "$work/pysrc" "$work/wheel" && cp -r "$root/python" "$work/pysrc" &&
(cd "$work/pysrc" && /usr/bin/python3 -c 'import sys; from setuptools import build_meta as b; print(b.build_wheel(sys.argv[1]))' \
	"$work/wheel") > "$log/wheel.log" 2>&1 &&
	/usr/bin/python3 -m zipfile -l "$work/wheel/npushm-$VERSION-py3-none-any.whl" >> "$log/wheel.log" 2>&1 &&
	grep -q 'npushm/_libnpushm.py' "$log/wheel.log"
result $? "pyproject.toml builds npushm-$VERSION-py3-none-any.whl" "$log/wheel.log"

# -------------------------------------------------------- uninstall
$MAKE -C "$root" --no-print-directory uninstall DESTDIR="$D" PREFIX=/usr > "$log/uninstall.log" 2>&1 &&
	find "$D" ! -type d >> "$log/uninstall.log" && find "$D" -name '*npushm*' >> "$log/uninstall.log" &&
	! find "$D" ! -type d -o -name '*npushm*' | grep -q .
result $? "make uninstall leaves no file, link or npushm directory behind (the byte code Python wrote included)" \
	"$log/uninstall.log"

# the default prefix: /usr/local, with the same multiarch libdir
{
	$MAKE -C "$root" --no-print-directory install DESTDIR="$D2" &&
	for f in /usr/local/bin/npushm "/usr/local/lib/$(cc -print-multiarch)/libnpushm.so.1" \
		"/usr/local/lib/$(cc -print-multiarch)/pkgconfig/npccl.pc" /usr/local/include/npushm.h \
		/usr/local/share/man/man1/npushm.1 /usr/local/etc/modprobe.d/npushm.conf \
		"/usr/local/src/npushm-$VERSION/dkms.conf" /usr/local/lib/udev/rules.d/60-npushm.rules \
		"$(/usr/bin/python3 -c 'import sys; print("/usr/local/lib/python%d.%d/dist-packages" % sys.version_info[:2])')/npushm/__init__.py"; do
		[ -e "$D2$f" ] || { echo "missing $f"; exit 1; }
	done &&
	grep -qx 'prefix=/usr/local' "$D2/usr/local/lib/$(cc -print-multiarch)/pkgconfig/npushm.pc" &&
	$MAKE -C "$root" --no-print-directory uninstall DESTDIR="$D2" &&
	! find "$D2" ! -type d | grep .
} > "$log/local.log" 2>&1
result $? "the default prefix installs under /usr/local (multiarch libdir, Debian's local dist-packages) and uninstalls" \
	"$log/local.log"
[ "$failed" = 0 ]
