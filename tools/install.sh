#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# install.sh - install, uninstall or list npushm's installed files.
#
#   install.sh install|uninstall|list
#
# Called by make install / make uninstall / make install-list (tools/install.mk),
# which pass the directories in the environment: DESTDIR, prefix, bindir,
# libdir, includedir, datadir, mandir, sysconfdir, pythondir, dkmsdir, udevdir,
# modulesloaddir, systemdunitdir, modprobedir, bashcompdir, plus BUILD (the build tree) and
# VERSION. One list of operations (plan below) drives all three actions, so
# uninstall removes exactly what install wrote.
#
# Libraries are installed as libX.so.1.0.0 with the links libX.so.1 (the
# soname) and libX.so (for -lX). Programs lose the build tree's RUNPATH
# (chrpath -d): installed, they use the dynamic linker's standard path.
# Text files made from templates (pkg-config files, dkms.conf) get the
# installed paths, never a build path.
set -eu
action=${1:?usage: install.sh install|uninstall|list}
root=$(cd "$(dirname "$0")/.." && pwd)
: "${BUILD:?}" "${VERSION:?}" "${prefix:?}" "${bindir:?}" "${libdir:?}" "${includedir:?}"
: "${mandir:?}" "${sysconfdir:?}" "${pythondir:?}" "${dkmsdir:?}" "${udevdir:?}"
: "${modulesloaddir:?}" "${systemdunitdir:?}" "${modprobedir:?}" "${bashcompdir:?}"
D=${DESTDIR:-}
LIBVER=1.0.0	# the libraries' file version; the soname is libX.so.1
case "$action" in install|uninstall|list) ;; *) echo "install.sh: unknown action '$action'" >&2; exit 2 ;; esac

say() { [ "$action" = list ] || echo "  $action $1"; }

# file MODE SRC DEST: a copy
file() {
	case "$action" in
	list) echo "$D$3" ;;
	install)
		[ -f "$2" ] || { echo "install.sh: $2 is missing (build it first: make)" >&2; exit 1; }
		say "$3"
		install -D -m "$1" "$2" "$D$3" ;;
	uninstall) [ ! -e "$D$3" ] || { say "$3"; rm -f "$D$3"; } ;;
	esac
}

# program SRC DEST: a copy without the build tree's RUNPATH
program() {
	file 0755 "$1" "$2"
	drop_runpath "$2"
}

# drop_runpath DEST: remove the build tree's RUNPATH from an installed ELF file
drop_runpath() {
	if [ "$action" = install ] && readelf -d "$D$1" | grep -q -E 'R(UN)?PATH'; then
		command -v chrpath >/dev/null ||
			{ echo "install.sh: chrpath is needed to drop the build tree's RUNPATH (apt-get install chrpath)" >&2; exit 1; }
		chrpath -d "$D$1" >/dev/null
	fi
}

# link TARGET DEST: a symbolic link
link() {
	case "$action" in
	list) echo "$D$2" ;;
	install) say "$2 -> $1"; mkdir -p "$(dirname "$D$2")"; ln -sfn "$1" "$D$2" ;;
	uninstall) [ ! -L "$D$2" ] || { say "$2"; rm -f "$D$2"; } ;;
	esac
}

# template MODE SRC DEST: a copy with @prefix@, @libdir@, @includedir@ and
# @version@ replaced by the installed values
template() {
	case "$action" in
	install)
		say "$3"
		mkdir -p "$(dirname "$D$3")"
		sed -e "s|@prefix@|$prefix|g" -e "s|@libdir@|$libdir|g" -e "s|@includedir@|$includedir|g" \
			-e "s|@version@|$VERSION|g" "$2" > "$D$3.tmp"
		chmod "$1" "$D$3.tmp" && mv "$D$3.tmp" "$D$3" ;;
	*) file "$1" "$2" "$3" ;;
	esac
}

# library NAME [static]: libNAME.so.1.0.0, its two links, and libNAME.a
# (the build tree's RUNPATH, which finds sibling libraries there, is dropped)
library() {
	file 0644 "$BUILD/lib/lib$1.so" "$libdir/lib$1.so.$LIBVER"
	drop_runpath "$libdir/lib$1.so.$LIBVER"
	link "lib$1.so.$LIBVER" "$libdir/lib$1.so.1"
	link "lib$1.so.1" "$libdir/lib$1.so"
	file 0644 "$BUILD/lib/lib$1.a" "$libdir/lib$1.a"
}

plan() {
	# libraries, headers, pkg-config files
	library npushm
	library nptensor
	library npccl
	library npbert
	library npllama
	file 0644 "$root/libnpushm/include/npushm.h" "$includedir/npushm.h"
	file 0644 "$root/libnpushm/include/npushm_rdma.h" "$includedir/npushm_rdma.h"
	file 0644 "$root/libnpushm/include/npushm_watch.h" "$includedir/npushm_watch.h"
	file 0644 "$root/libnpushm/include/npushm_space.h" "$includedir/npushm_space.h"
	file 0644 "$root/libnpushm/include/npushm_cluster.h" "$includedir/npushm_cluster.h"
	file 0644 "$root/tensor/include/nptensor.h" "$includedir/nptensor.h"
	file 0644 "$root/ccl/include/npccl.h" "$includedir/npccl.h"
	file 0644 "$root/apps/bert/include/npbert.h" "$includedir/npbert.h"
	file 0644 "$root/apps/llama/include/npllama.h" "$includedir/npllama.h"
	file 0644 "$root/include/uapi/linux/npushm.h" "$includedir/linux/npushm.h"
	template 0644 "$root/libnpushm/npushm.pc.in" "$libdir/pkgconfig/npushm.pc"
	template 0644 "$root/tensor/nptensor.pc.in" "$libdir/pkgconfig/nptensor.pc"
	template 0644 "$root/ccl/npccl.pc.in" "$libdir/pkgconfig/npccl.pc"
	template 0644 "$root/apps/bert/npbert.pc.in" "$libdir/pkgconfig/npbert.pc"
	template 0644 "$root/apps/llama/npllama.pc.in" "$libdir/pkgconfig/npllama.pc"

	# programs, their manual pages and completion
	program "$BUILD/bin/npushm" "$bindir/npushm"
	program "$BUILD/bin/npccl-perf" "$bindir/npccl-perf"
	program "$BUILD/bin/npushm-bert" "$bindir/npushm-bert"
	program "$BUILD/bin/npushm-llama" "$bindir/npushm-llama"
	program "$BUILD/bin/npccl-load" "$bindir/npccl-load"
	for m in "$root"/docs/man/*.[1-8]; do
		s=${m##*.}
		file 0644 "$m" "$mandir/man$s/${m##*/}"
	done
	file 0644 "$root/deploy/bash-completion/npushm" "$bashcompdir/npushm"

	# the Python package
	for p in "$root"/python/npushm/*.py; do
		file 0644 "$p" "$pythondir/npushm/${p##*/}"
	done

	# the module: source for DKMS, its configuration
	template 0644 "$root/deploy/dkms.conf.in" "$dkmsdir/dkms.conf"
	file 0644 "$root/Kbuild" "$dkmsdir/Kbuild"
	for k in "$root"/kmod/Kbuild "$root"/kmod/*.c "$root"/kmod/*.h; do
		case "$k" in *.mod.c) continue ;; esac
		file 0644 "$k" "$dkmsdir/kmod/${k##*/}"
	done
	file 0644 "$root/include/uapi/linux/npushm.h" "$dkmsdir/include/uapi/linux/npushm.h"
	file 0644 "$root/deploy/modprobe.d/npushm.conf" "$modprobedir/npushm.conf"
	file 0644 "$root/deploy/modules-load.d/npushm.conf" "$modulesloaddir/npushm.conf"
	file 0644 "$root/deploy/udev/60-npushm.rules" "$udevdir/rules.d/60-npushm.rules"
	file 0644 "$root/deploy/systemd/run-npushm.mount" "$systemdunitdir/run-npushm.mount"
}

plan

case "$action" in
install)
	if [ -z "$D" ] && [ "$(id -u)" = 0 ]; then
		# the udev rule gives /dev/npushm to group npushm
		getent group npushm >/dev/null || groupadd --system npushm
		ldconfig
	fi
	;;
uninstall)
	# byte code the interpreter wrote next to the installed package, then the
	# directories that only npushm uses
	rm -rf "$D$pythondir/npushm/__pycache__"
	for d in "$pythondir/npushm" "$dkmsdir/kmod" "$dkmsdir/include/uapi/linux" \
		"$dkmsdir/include/uapi" "$dkmsdir/include" "$dkmsdir"; do
		[ ! -d "$D$d" ] || rmdir "$D$d" 2>/dev/null ||
			echo "install.sh: $D$d is not empty (files not installed by npushm); left in place" >&2
	done
	if [ -z "$D" ] && [ "$(id -u)" = 0 ]; then
		ldconfig
	fi
	;;
esac
