#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-package-tests.sh - suite "packages" (TAP): run plain `make` on a copy of
# the tracked tree (what a fresh clone has: no kselftest harness), build the
# Debian packages from it (dpkg-buildpackage -b, DEB_BUILD_OPTIONS
# nocheck), check them with lintian (no error, no warning), build the module
# with DKMS from the npushm-dkms package for the test VM's kernel (dkms
# build -k, in a DKMS tree of its own: nothing is installed on the host), and
# boot the VM to load that module with the package's example parameters and
# list its pool with the packaged command.
#
#   run-package-tests.sh
set -u
# make and dpkg-buildpackage run as a user would start them, not as part of
# the make that runs this suite (whose jobserver they cannot use)
unset MAKEFLAGS MFLAGS MAKELEVEL
root=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$root/build}
VERSION=$(cat "$root/VERSION")
work=$BUILD/packages
log=$work/log
rm -rf "$work"
mkdir -p "$work/src/npushm" "$log"
echo "1..7"

. "$root/tools/tap.sh"
skip_rest() {	# skip_rest REASON: the tests that need what failed
	while [ "$n" -lt 7 ]; do
		tap_skip "not run" "$1"
	done
	exit 1
}

# 1. the packages, built from the tracked files only (what a clone has)
(cd "$root" && git ls-files -z | xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
	tar --null -T - -cf -) | tar -x -C "$work/src/npushm"
# 0. the README's build section as written, on what a fresh clone has: plain
# `make` builds the userspace (the module's selftests need the harness that
# `make setup` extracts, so it says so instead of failing)
t0=$(date +%s)
(cd "$work/src/npushm" && make BUILD="$work/plain-build") > "$log/plain-make.log" 2>&1
st=$?
t1=$(date +%s)
[ "$st" = 0 ] && [ -x "$work/plain-build/bin/npushm" ] && [ -e "$work/plain-build/lib/libnpushm.so.1" ] &&
	grep -q "run 'make setup' (as root)" "$log/plain-make.log" &&
	"$work/plain-build/bin/npushm" --version > /dev/null
result $? "plain make on the tracked files builds the userspace as the README says ($((t1 - t0)) s)" \
	"$log/plain-make.log"
rm -rf "$work/plain-build"

t0=$(date +%s)
(cd "$work/src/npushm" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -b -us -uc) \
	> "$log/dpkg-buildpackage.log" 2>&1
st=$?
t1=$(date +%s)
debs=$(cd "$work/src" && ls ./*.deb 2>/dev/null | grep -v dbgsym | sed 's|^\./||; s|_.*||' | LC_ALL=C sort | tr '\n' ' ')
want="libnpbert1 libnpccl1 libnpllama1 libnptensor1 libnpushm-dev libnpushm1 npushm-dkms npushm-tools python3-npushm "
[ "$st" = 0 ] && [ "$debs" = "$want" ]
result $? "dpkg-buildpackage -b -us -uc builds $want($((t1 - t0)) s)" "$log/dpkg-buildpackage.log"
[ "$st" = 0 ] || skip_rest "no packages"

# 2. lintian: no error and no warning (overrides carry their reasons)
lintian --fail-on error,warning --tag-display-limit 0 -I "$work/src"/npushm_*_"$(dpkg --print-architecture)".changes \
	> "$log/lintian.log" 2>&1
result $? "lintian reports no error and no warning ($(grep -c '^I:' "$log/lintian.log") informational tags)" \
	"$log/lintian.log"
grep '^I:' "$log/lintian.log" | sed 's/^/# lintian /'

# 3. what each package holds and needs
x=$work/root
rm -rf "$x" && for d in "$work/src"/*.deb; do dpkg-deb -x "$d" "$x"; done
{
	ma=$(cc -print-multiarch)
	dpkg-deb -c "$work/src"/libnpushm1_*.deb | grep -q " ./usr/lib/$ma/libnpushm.so.1 -> libnpushm.so.1.0.0$" ||
		echo "libnpushm1 lacks the soname link"
	dpkg-deb -c "$work/src"/libnpushm1_*.deb | grep -E '\.(a|h)$|/libnpushm\.so$' && echo "libnpushm1 has development files"
	# each listing read whole (grep -q on a pipe would cut dpkg-deb's tar short)
	for p in libnpllama1 libnpushm-dev npushm-tools; do
		dpkg-deb -c "$work/src/${p}"_*.deb > "$work/$p.list"
	done
	grep -q " ./usr/lib/$ma/libnpllama.so.1 -> libnpllama.so.1.0.0$" "$work/libnpllama1.list" ||
		echo "libnpllama1 lacks the soname link"
	grep -E '\.(a|h|pc)$|/libnpllama\.so$' "$work/libnpllama1.list" && echo "libnpllama1 has development files"
	for f in usr/include/npllama.h "usr/lib/$ma/libnpllama.a" "usr/lib/$ma/libnpllama.so" \
		"usr/lib/$ma/pkgconfig/npllama.pc" usr/share/man/man3/libnpllama.3.gz; do
		grep -q " ./$f" "$work/libnpushm-dev.list" || echo "libnpushm-dev lacks $f"
	done
	dpkg-deb -f "$work/src"/libnpushm-dev_*.deb Depends | grep -q 'libnpllama1 (= ' || echo "libnpushm-dev does not depend on libnpllama1"
	for f in usr/bin/npushm-llama usr/share/man/man1/npushm-llama.1.gz; do
		grep -q " ./$f$" "$work/npushm-tools.list" || echo "npushm-tools lacks $f"
	done
	LD_LIBRARY_PATH="$x/usr/lib/$ma" "$x/usr/bin/npushm-llama" --version | grep -qx "npushm-llama $VERSION" ||
		echo "the packaged npushm-llama does not run with the packaged libraries"
	dpkg-deb -f "$work/src"/npushm-tools_*.deb Depends | grep -q 'libnpushm1 (>= ' || echo "npushm-tools does not depend on libnpushm1"
	dpkg-deb -f "$work/src"/python3-npushm_*.deb Depends | grep -q 'libnptensor1' || echo "python3-npushm does not depend on libnptensor1"
	dpkg-deb -f "$work/src"/npushm-dkms_*.deb Depends | grep -q 'dkms' || echo "npushm-dkms does not depend on dkms"
	[ -f "$x/usr/src/npushm-$VERSION/dkms.conf" ] || echo "no dkms.conf in npushm-dkms"
	grep -q '^AUTOINSTALL="yes"' "$x/usr/src/npushm-$VERSION/dkms.conf" || echo "dkms.conf: no AUTOINSTALL"
	dpkg-deb -I "$work/src"/npushm-dkms_*.deb postinst | grep -q 'addgroup --system --quiet npushm' ||
		echo "npushm-dkms does not create group npushm"
	for f in $(find "$x" -type f); do
		readelf -d "$f" 2>/dev/null | grep -E 'R(UN)?PATH' && echo "$f has a RUNPATH"
	done
	grep -rlF "$work/src" "$x" | grep -v '^'"$x"'/usr/lib/debug/' && echo "a build path in the files above"
} > "$log/contents.log" 2>&1
[ ! -s "$log/contents.log" ]
result $? "package contents and dependencies (sonames, dev files apart, dkms, group npushm, no RUNPATH, no build path)" \
	"$log/contents.log"

# 4. the packaged Python package and libraries work together
shm=$(mktemp -d /dev/shm/npushm-package-test.XXXXXX)
(cd /tmp && env -u BUILD -u NPUSHM_LIBDIR NPUSHM_BACKEND=posix NPUSHM_SHM_DIR="$shm" \
	PYTHONPATH="$x/usr/lib/python3/dist-packages" LD_LIBRARY_PATH="$x/usr/lib/$(cc -print-multiarch)" \
	/usr/bin/python3 "$root/tests/install/use_python.py" "$x" "$VERSION") > "$log/python.log" 2>&1
result $? "python3-npushm with libnpushm1 and libnptensor1 loads and attaches a model" "$log/python.log"
rm -rf "$shm"

# 5. DKMS builds the module from npushm-dkms for the VM's kernel
abi=$(cat "$BUILD/kernel/abi" 2>/dev/null)
dk=$work/dkms
ko=$dk/npushm/$VERSION/$abi/$(uname -m)/module/npushm.ko
mkdir -p "$dk"
t0=$(date +%s)
# a subshell: a failed step ends the block, not the script (the result below
# reports it)
(
	[ -n "$abi" ] || { echo "no test kernel: run make setup"; exit 1; }
	dkms add -m npushm -v "$VERSION" --sourcetree "$x/usr/src" --dkmstree "$dk" &&
	# sign_file: no module signing (it would create a MOK key pair on the host)
	sign_file=/nonexistent dkms build -m npushm -v "$VERSION" -k "$abi" --sourcetree "$x/usr/src" \
		--dkmstree "$dk" -j "$(nproc)" &&
	modinfo -F version "$ko" | grep -qx "$VERSION" && modinfo -F vermagic "$ko" | grep -q "^$abi "
) > "$log/dkms.log" 2>&1
st=$?
t1=$(date +%s)
result $st "dkms build -k $abi builds npushm.ko $VERSION from npushm-dkms ($((t1 - t0)) s)" "$log/dkms.log"
[ "$st" = 0 ] || skip_rest "no DKMS-built module"

# 6. the VM loads the module DKMS built
t0=$(date +%s)
VM_QUIET=1 "$root/selftests/vm/run-vm.sh" -t 600 -o "$work/vm" -- \
	sh -c "'$root/tests/packages/guest-dkms-module.sh' '$x' '$ko' '$VERSION' > '$work/vm/guest.log' 2>&1" \
	> "$log/vm.log" 2>&1
st=$?
t1=$(date +%s)
cat "$work/vm/guest.log" >> "$log/vm.log" 2>/dev/null
result $st "the test VM loads the DKMS-built module with the modprobe.d example's parameters and the packaged npushm lists its pool ($((t1 - t0)) s)" \
	"$log/vm.log"
sed 's/^/# /' "$work/vm/guest.log" 2>/dev/null
[ "$failed" = 0 ]
