#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# PID 1 of the test VM after switch_root into the host's read-only root over 9p.
# Mounts writable scratch filesystems and the result share, makes the unpacked
# Debian module tree the one modprobe sees, runs the runner's script
# ($out/run.sh), saves the kernel log and powers off, returning the script's
# status through the isa-debug-exit port (status 0 -> qemu exits 1).
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH HOME=/tmp TMPDIR=/tmp LANG=C.UTF-8
bb=/bin/busybox
rc=1
finish() {
	$bb dmesg > "$out/dmesg.txt" 2>/dev/null
	$bb sync
	[ "$rc" -gt 0 ] && rc=1
	printf "\\$(printf '%03o' "$rc")" | $bb dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
	$bb poweroff -f
}
$bb mount -t proc proc /proc
$bb mount -t sysfs sysfs /sys
for a in $($bb cat /proc/cmdline); do
	case "$a" in
	npushm.out=*) out=${a#npushm.out=} ;;
	npushm.kroot=*) kroot=${a#npushm.kroot=} ;;
	npushm.keep=*) keep=$(echo "${a#npushm.keep=}" | $bb tr : ' ') ;;
	esac
done
$bb mkdir -p /dev/pts /dev/shm
$bb mount -t devpts devpts /dev/pts

# Writable scratch directories. A tmpfs over /tmp would hide a checkout, a
# kernel tree or a result directory living there: set those aside first
# (on /run's tmpfs) and put them back on top of the new tmpfs.
$bb mount -t tmpfs -o mode=0755 tmpfs /run
i=0
for d in /tmp /var/tmp /dev/shm; do
	tops=
	for p in $keep $kroot $out; do
		case "$p/" in
		"$d"/*)
			rest=${p#"$d"/}
			t=$d/${rest%%/*}
			case " $tops " in *" $t "*) ;; *) tops="$tops $t" ;; esac
			;;
		esac
	done
	first=$((i + 1))
	for t in $tops; do
		i=$((i + 1))
		$bb mkdir -p "/run/npushm-keep/$i"
		$bb mount -o rbind "$t" "/run/npushm-keep/$i"
	done
	$bb mount -t tmpfs -o mode=1777 tmpfs "$d"
	j=$first
	for t in $tops; do
		$bb mkdir -p "$t"
		$bb mount --move "/run/npushm-keep/$j" "$t"
		j=$((j + 1))
	done
done
$bb mount -t 9p -o trans=virtio,version=9p2000.L,rw,msize=524288 out "$out" || {
	echo "vm-guest: cannot mount the result share at $out"; out=/tmp; finish; }
$bb mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
$bb mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
abi=$($bb uname -r)
# A kernel the host has no /lib/modules entry for (the debug kernel): give the
# guest its own /lib/modules so there is a mount point to bind onto.
if [ ! -d "/lib/modules/$abi" ]; then
	$bb mount -t tmpfs -o mode=0755 tmpfs /lib/modules && $bb mkdir -p "/lib/modules/$abi"
fi
$bb mount --bind "$kroot/lib/modules/$abi" "/lib/modules/$abi" || {
	echo "vm-guest: cannot bind $kroot/lib/modules/$abi"; finish; }
echo /sbin/modprobe > /proc/sys/kernel/modprobe
$bb ip link set lo up
$bb hostname npushm-vm
/bin/sh "$out/run.sh"
rc=$?
finish
