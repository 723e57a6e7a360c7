#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# setup.sh - install what npushm needs from Debian and prepare the test kernel.
#
#   setup.sh [build|demo|check]   install the missing packages of that set
#                                 (default check: everything), as root
#   setup.sh --missing SET        print the set's missing packages; exit 1 if any
#
# Sets, each including the one before:
#   build  what plain `make` needs (compiler, libnl, json-c, xxhash, OpenBLAS, oneDNN,
#          DLPack, the verbs headers: libnpushm and libnpccl load libibverbs at run
#          time, libnptensor loads oneDNN's libdnnl2 at run time)
#   demo   what `make demo` needs on top (Python with NumPy and PyTorch, xxhsum)
#   check  what `make check` needs on top (the test kernel and qemu, the kernel
#          source for checkpatch and the kselftest harness, sparse, rdma-core, the
#          MPIs, clang, the packaging tools: reuse, lintian, debhelper, DKMS...)
# Idempotent: installs only missing packages. For check it also prepares, under
# $BUILD/kernel:
#   - the Debian kernel image matching linux-headers-amd64, unpacked (not installed)
#     with depmod run on its module tree, for the VM selftests;
#   - kselftest_harness.h, kselftest.h and checkpatch.pl extracted from linux-source-6.1.
# Nothing is fetched from outside Debian's archive.
set -eu

BUILD=${BUILD:-$(pwd)/build}
PKGS_BUILD="build-essential pkg-config libnl-3-dev libnl-genl-3-dev libnl-route-3-dev libjson-c-dev
libxxhash-dev libopenblas-dev libdnnl-dev libdlpack-dev libibverbs-dev"
PKGS_DEMO="python3 python3-numpy python3-torch xxhash"
PKGS_CHECK="linux-headers-amd64 linux-source-6.1 qemu-system-x86 busybox-static kmod cpio iproute2
sparse rdma-core ibverbs-utils ibverbs-providers python3-numexpr python3-pytest openmpi-bin
libopenmpi-dev mpich libmpich-dev iperf3 perftest clang llvm libclang-rt-14-dev
flex bison bc libelf-dev libssl-dev xz-utils
reuse lintian debhelper dh-dkms dkms dh-python python3-setuptools chrpath bash-completion man-db
libtorch-dev python3-pybind11 python3-dev python3-pytest"

missing_only=no
if [ "${1:-}" = --missing ]; then
	missing_only=yes
	shift
fi
set_name=${1:-check}
case "$set_name" in
build) PKGS=$PKGS_BUILD ;;
demo) PKGS="$PKGS_BUILD $PKGS_DEMO" ;;
check) PKGS="$PKGS_BUILD $PKGS_DEMO $PKGS_CHECK" ;;
*) echo "setup: unknown set '$set_name' (build, demo or check)" >&2; exit 2 ;;
esac
[ -n "${NPUSHM_EXTRA_PKGS:-}" ] && PKGS="$PKGS $NPUSHM_EXTRA_PKGS"

missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*" installed") ;;
	*) missing="$missing $p" ;;
	esac
done
if [ "$missing_only" = yes ]; then
	[ -z "$missing" ] || { echo "${missing# }"; exit 1; }
	exit 0
fi
mkdir -p "$BUILD"
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "setup: missing Debian packages:$missing" >&2
		echo "setup: run as root (or: sudo apt-get install$missing)" >&2
		exit 1
	fi
	echo "setup: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null 2>&1 || apt-get update
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing </dev/null >"$BUILD/apt.log" 2>&1 ||
		{ tail -20 "$BUILD/apt.log" >&2; echo "setup: apt-get install failed" >&2; exit 1; }
fi

# The test kernel and the kernel tools are for make check only.
[ "$set_name" = check ] || exit 0

# The ABI of the Debian kernel whose headers we build against, e.g. 6.1.0-57-amd64.
abi=$(dpkg-query -W -f='${Depends}' linux-headers-amd64 | sed -n 's/^linux-headers-\([^ ,]*\).*/\1/p')
[ -n "$abi" ] || { echo "setup: cannot derive the kernel ABI from linux-headers-amd64" >&2; exit 1; }

K=$BUILD/kernel
mkdir -p "$K"
M=$K/root/lib/modules/$abi/kernel
if [ ! -f "$K/root/boot/vmlinuz-$abi" ] || [ ! -f "$M/drivers/infiniband/sw/rxe/rdma_rxe.ko" ] ||
   [ ! -f "$M/fs/9p/9p.ko" ] || [ ! -f "$M/drivers/virtio/virtio_pci.ko" ]; then
	echo "setup: unpacking linux-image-$abi for the VM"
	rm -rf "$K/root" "$K"/linux-image-*.deb
	(cd "$K" && apt-get download -q "linux-image-$abi" >/dev/null 2>&1) ||
		{ apt-get update -qq >/dev/null 2>&1; (cd "$K" && apt-get download "linux-image-$abi"); } ||
		{ echo "setup: cannot download linux-image-$abi from Debian's archive" >&2; exit 1; }
	dpkg-deb -x "$K"/linux-image-"$abi"_*.deb "$K/root.tmp"
	depmod -b "$K/root.tmp" "$abi"
	rm -f "$K"/linux-image-*.deb
	mv "$K/root.tmp" "$K/root"
fi
echo "$abi" > "$K/abi"

S=$BUILD/linux-source
if [ ! -f "$S/scripts/checkpatch.pl" ]; then
	echo "setup: extracting kselftest harness and checkpatch from linux-source-6.1"
	rm -rf "$S.tmp" && mkdir -p "$S.tmp"
	tar -xJf /usr/src/linux-source-6.1.tar.xz -C "$S.tmp" --strip-components=1 \
		linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
		linux-source-6.1/tools/testing/selftests/kselftest.h \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
	rm -rf "$S" && mv "$S.tmp" "$S"
fi
touch "$BUILD/.setup-done"
