#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# build-kernel.sh - build, or reuse, the npushm debug kernel: Debian's
# linux-source-6.1 with defconfig + kvm_guest.config + selftests/debug/debug.config
# (KASAN, lockdep, kmemleak, fault injection; virtio/9p/veth/rxe built in).
#
#   build-kernel.sh            build if needed; last line printed: the cache directory
#   build-kernel.sh --dir      print the cache directory for the current inputs only
#   build-kernel.sh --cached   exit 0 if that kernel is already built, 1 if not
#
# The cache lives outside the checkout, one directory per input set:
#   ${NPUSHM_DEBUG_CACHE:-/var/cache/npushm/debug-kernel}/<linux-source version>-<sha256 of the fragment's options, 12>/
#     linux/        the configured and built tree (build the module with make -C linux M=...)
#     root/         boot/vmlinuz-<release> and lib/modules/<release>/ (VM_KERNEL_ROOT for run-vm.sh)
#     build.log     output of the last build; stamp: written only after a complete, verified build
# A first build takes 25-60 minutes on 2 cores (57 with the machine shared) and needs 4 GB of disk;
# with the stamp present a run costs nothing. An interrupted build resumes
# where it stopped. Concurrent runs wait for each other (flock).
# Environment: NPUSHM_DEBUG_CACHE (parent directory, above), NPUSHM_DEBUG_JOBS
# (make -j, default nproc), NPUSHM_LINUX_SOURCE (default /usr/src/linux-source-6.1.tar.xz).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
frag=$here/debug.config
tarball=${NPUSHM_LINUX_SOURCE:-/usr/src/linux-source-6.1.tar.xz}
base=${NPUSHM_DEBUG_CACHE:-/var/cache/npushm/debug-kernel}
jobs=${NPUSHM_DEBUG_JOBS:-$(nproc)}

die() { echo "build-kernel: $*" >&2; exit 1; }
say() { echo "build-kernel: $*" >&2; }

[ -f "$frag" ] || die "config fragment $frag missing"
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null || true)
if [ -z "$srcver" ] || [ ! -f "$tarball" ]; then
	die "Debian's linux-source-6.1 is not installed ($tarball); run tools/setup.sh as root (or apt-get install linux-source-6.1)"
fi
# The options alone name the build: comments and blank lines do not change the kernel.
hash=$(grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$frag" | sha256sum | cut -c1-12)
dir=$base/$srcver-$hash

case "${1:-}" in
--dir) echo "$dir"; exit 0 ;;
--cached) [ -f "$dir/stamp" ] && [ -d "$dir/root/boot" ]; exit $? ;;
"") ;;
*) die "usage: build-kernel.sh [--dir|--cached]" ;;
esac

if ! mkdir -p "$base" 2>/dev/null || [ ! -w "$base" ]; then
	die "cannot write the cache parent $base; run as root or set NPUSHM_DEBUG_CACHE to a writable directory"
fi

# One build per input set at a time; a second caller waits, then reuses it.
exec 9>"$base/.lock-$srcver-$hash"
if ! flock -n 9; then
	say "another build of $dir is running; waiting for it (see $dir/build.log)"
	flock 9
fi

if [ -f "$dir/stamp" ] && [ -d "$dir/root/boot" ]; then
	echo "$dir"
	exit 0
fi

missing=
for c in gcc make flex bison bc perl xz depmod; do
	command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
done
[ -f /usr/include/gelf.h ] || missing="$missing libelf-dev"
[ -f /usr/include/openssl/opensslv.h ] || missing="$missing libssl-dev"
[ -z "$missing" ] || die "missing build tools:$missing; run tools/setup.sh as root (it installs flex bison bc libelf-dev libssl-dev)"

mkdir -p "$dir"
avail=$(df -Pk "$dir" | awk 'NR == 2 { print int($4 / 1048576) }')
if [ ! -f "$dir/linux/.npushm-built" ] && [ "$avail" -lt 4 ]; then
	die "only ${avail} GB free under $dir; the build needs about 4 GB (set NPUSHM_DEBUG_CACHE elsewhere)"
fi

log=$dir/build.log
start=$(date +%s)
say "building the debug kernel in $dir (first build: 25-60 minutes on 2 cores; log: $log)"
: >> "$log"
echo "=== $(date -u '+%F %T') build-kernel.sh: linux-source-6.1 $srcver, fragment $hash, -j$jobs" >> "$log"

run() { # run a build step, its output to the log; on failure show the tail
	if ! "$@" >> "$log" 2>&1; then
		tail -n 30 "$log" >&2
		die "failed: $* (full log: $log)"
	fi
}

# 1. Extract (once; into a temporary name so an interrupted extraction is redone).
if [ ! -f "$dir/linux/.npushm-extracted" ]; then
	say "extracting $tarball"
	rm -rf "$dir/linux" "$dir/extract.tmp"
	mkdir -p "$dir/extract.tmp"
	run tar -xJf "$tarball" -C "$dir/extract.tmp"
	top=$(ls "$dir/extract.tmp")
	[ -f "$dir/extract.tmp/$top/Makefile" ] || die "unexpected layout of $tarball"
	mv "$dir/extract.tmp/$top" "$dir/linux"
	rmdir "$dir/extract.tmp"
	touch "$dir/linux/.npushm-extracted"
fi
K=$dir/linux

# 2. Configure: defconfig + kvm_guest.config + the fragment, then verify every line.
if [ ! -f "$K/.npushm-configured" ]; then
	say "configuring (defconfig + kvm_guest.config + $(basename "$frag"))"
	cp "$frag" "$dir/debug.config"
	run make -C "$K" defconfig
	run make -C "$K" kvm_guest.config
	(cd "$K" && run scripts/kconfig/merge_config.sh .config "$dir/debug.config")
	run make -C "$K" olddefconfig
fi
bad=$(awk '
	FILENAME == ARGV[1] {
		if ($0 ~ /^CONFIG_[A-Za-z0-9_]+=/) { n = $0; sub(/=.*/, "", n); want[n] = $0 }
		else if ($0 ~ /^# CONFIG_[A-Za-z0-9_]+ is not set/) { want[$2] = "unset" }
		next
	}
	/^CONFIG_[A-Za-z0-9_]+=/ { n = $0; sub(/=.*/, "", n); have[n] = $0 }
	END {
		for (n in want) {
			if (want[n] == "unset") { if (n in have) print "  " n ": wanted unset, got " have[n] }
			else if (!(n in have)) print "  " n ": wanted " want[n] ", got unset"
			else if (have[n] != want[n]) print "  " n ": wanted " want[n] ", got " have[n]
		}
	}' "$frag" "$K/.config")
if [ -n "$bad" ]; then
	rm -f "$K/.npushm-configured"
	echo "$bad" >&2
	die "the final .config does not have every option of $frag (above); fix the fragment (a dependency is missing?)"
fi
touch "$K/.npushm-configured"

# 3. Build (make is incremental: an interrupted build resumes).
say "make -j$jobs bzImage modules"
run nice -n 10 make -C "$K" -j"$jobs" bzImage modules
rel=$(make -s -C "$K" kernelrelease)
[ -n "$rel" ] || die "cannot get the kernel release from $K"
touch "$K/.npushm-built"

# 4. Install into root/ (boot/vmlinuz-<rel>, lib/modules/<rel>) for run-vm.sh.
rm -rf "$dir/root.tmp"
mkdir -p "$dir/root.tmp/boot"
cp "$K/arch/x86/boot/bzImage" "$dir/root.tmp/boot/vmlinuz-$rel"
cp "$K/.config" "$dir/root.tmp/boot/config-$rel"
cp "$K/System.map" "$dir/root.tmp/boot/System.map-$rel"
run make -C "$K" modules_install INSTALL_MOD_PATH="$dir/root.tmp" DEPMOD="$(command -v depmod)"
[ -f "$dir/root.tmp/lib/modules/$rel/modules.dep" ] || die "modules_install made no modules.dep under $dir/root.tmp"
rm -rf "$dir/root"
mv "$dir/root.tmp" "$dir/root"

end=$(date +%s)
{
	echo "release=$rel"
	echo "linux_source=$srcver"
	echo "fragment_sha256=$hash"
	echo "built=$(date -u '+%F %T')"
	echo "seconds=$((end - start))"
} > "$dir/stamp"
say "done in $(((end - start) / 60)) min $(((end - start) % 60)) s: kernel $rel"
echo "$dir"
