#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# SPDX-FileCopyrightText: 2026 The npushm authors
# run-vm.sh - run a command inside Debian's kernel under qemu (TCG) and return
# its exit status; fail on any kernel WARNING, BUG, Oops, panic or hang.
#
#   run-vm.sh [-m MEM] [-t SECONDS] [-o OUTDIR] -- COMMAND [ARGS...]
#
# The guest sees the host's root filesystem read-only over virtio-9p (so the
# checkout and host binaries are usable at the same paths) and OUTDIR
# read-write at the same path. COMMAND runs as root in the checkout directory.
# The console log is OUTDIR/console.log, the kernel log OUTDIR/dmesg.txt;
# OUTDIR defaults to a new build/vm/out.XXXXXX (build/vm/last links the newest).
# Environment: BUILD (default ./build), VM_KERNEL_ROOT (an unpacked kernel
# tree with boot/vmlinuz-* and lib/modules/*, default $BUILD/kernel/root),
# VM_APPEND (extra kernel arguments), VM_SMP (default 2), VM_NUMA_NODE1 (a
# size in MiB: the guest gets a second NUMA node of that much memory and no
# CPUs, taken from MEM, as a CXL expander appears), VM_NUMA_SPLIT=1 (instead:
# two NUMA nodes, each with half of MEM and one CPU, each CPU a socket of its
# own (VM_SMP is ignored): a
# two-socket host in small), VM_IVSHMEM (a size in MiB: a PCI
# ivshmem-plain device, id ivshmem0 on a hot-pluggable PCIe root port (and
# a spare memory backend, ivshmem0-spare, to plug one back), whose
# BAR 2 is that much memory; its PCI address is written to
# OUTDIR/ivshmem-address; the guest may then drive qemu's monitor through
# OUTDIR, NPUSHM_VM_OUT to it: selftests/vm/qmp-relay.py), VM_QUIET=1 (do not
# echo the console), VM_STORM_LIMIT (stop the VM after this many WARNING/BUG
# lines, default 200), VM_REPORTS_JUDGED_BY (kernel reports do not fail the
# run here: the named caller judges them; the debug lane, whose fault pass
# makes the kernel print stack traces on purpose). Variables named NPUSHM_*,
# NPCCL_* and NPT_* are passed on to COMMAND.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$(pwd)/build}
mem=2G
tmo=900
out=
while [ $# -gt 0 ]; do
	case "$1" in
	-m) mem=$2; shift 2 ;;
	-t) tmo=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: run-vm.sh [-m MEM] [-t SECONDS] [-o OUTDIR] -- COMMAND..." >&2; exit 2; }

kroot=${VM_KERNEL_ROOT:-$BUILD/kernel/root}
kimg=$(ls "$kroot"/boot/vmlinuz-* 2>/dev/null | head -n1)
[ -n "$kimg" ] || { echo "run-vm: no kernel under $kroot/boot; run tools/setup.sh" >&2; exit 2; }
abi=${kimg##*/vmlinuz-}
moddir=$kroot/lib/modules/$abi
command -v qemu-system-x86_64 >/dev/null || { echo "run-vm: qemu-system-x86_64 missing; run tools/setup.sh" >&2; exit 2; }
[ -d "$moddir" ] || { echo "run-vm: $moddir missing (an unpacked kernel needs lib/modules/$abi; run tools/setup.sh)" >&2; exit 2; }

if [ -z "$out" ]; then
	# A directory of its own, so that VMs can run side by side; build/vm/last
	# points at the newest, and only the ten newest are kept.
	mkdir -p "$BUILD/vm"
	out=$(mktemp -d "$BUILD/vm/out.XXXXXX")
	ln -sfn "$(basename "$out")" "$BUILD/vm/last"
	ls -dt "$BUILD"/vm/out.* 2>/dev/null | tail -n +11 | xargs -r rm -rf
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/console.log" "$out/dmesg.txt"

# Initramfs: busybox plus the modules needed to mount 9p, in dependency order.
ird=$BUILD/vm/initramfs-$abi.$$
irf=$BUILD/vm/initramfs-$abi.cpio.gz
if [ ! -f "$irf" ] || [ "$here/initramfs-init" -nt "$irf" ] || [ "$moddir/modules.dep" -nt "$irf" ]; then
	rm -rf "$ird" && mkdir -p "$ird/bin" "$ird/modules" "$ird/proc" "$ird/sys" "$ird/dev"
	cp /bin/busybox "$ird/bin/busybox"
	for a in sh mount umount insmod mkdir cat dd printf poweroff switch_root echo; do
		ln -s busybox "$ird/bin/$a"
	done
	cp "$here/initramfs-init" "$ird/init" && chmod +x "$ird/init"
	: > "$ird/modules.order"
	for m in virtio_pci 9pnet_virtio 9p; do
		for dep in $(awk -v m="$m" -F': ' '{ n=$1; sub(".*/", "", n); sub("\\.ko.*", "", n); gsub("-", "_", n) }
				n == m { c=split($2, d, " "); for (i=c; i>=1; i--) print d[i]; print $1 }' "$moddir/modules.dep"); do
			b=${dep##*/}
			grep -qx "$b" "$ird/modules.order" && continue
			cp "$moddir/$dep" "$ird/modules/$b"
			echo "$b" >> "$ird/modules.order"
		done
	done
	(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) > "$irf.$$"
	mv "$irf.$$" "$irf"
	rm -rf "$ird"
fi

# The script the guest runs: the command, in this directory, with this PATH.
{
	echo "cd '$(pwd)' || exit 1"
	echo "export PATH='$PATH' BUILD='$BUILD' NPUSHM_IN_VM=1 NPUSHM_VM_OUT='$out' CI='${CI:-}'"
	# The project's own settings (NPUSHM_*, NPCCL_*, NPT_*) pass through.
	for v in $(compgen -e | grep -E '^(NPUSHM|NPCCL|NPT)_[A-Za-z0-9_]*$'); do
		printf 'export %s=%q\n' "$v" "${!v}"
	done
	printf 'exec'
	for a in "$@"; do printf " '%s'" "$(printf '%s' "$a" | sed "s/'/'\\\\''/g")"; done
	echo
} > "$out/run.sh"

append="console=ttyS0 loglevel=5 panic_on_warn=1 oops=panic panic=-1 softlockup_panic=1 hung_task_panic=1"
append="$append npushm.guest=$here/vm-guest.sh npushm.out=$out npushm.kroot=$kroot"
append="$append npushm.keep=$(pwd):$BUILD:$here ${VM_APPEND:-}"

# A kernel problem fails the run whatever the command returned.
pat='WARNING:|BUG:|Oops|Kernel panic|general protection fault|Call Trace:|UBSAN:|KASAN:|kmemleak:.*unreferenced|possible circular locking|INFO: task .* blocked'

# A storm of reports (a kernel that keeps running after them, as the debug
# lane's does) would otherwise run into the timeout: stop the VM once there
# are more than VM_STORM_LIMIT of them; the run fails on them below.
storm_limit=${VM_STORM_LIMIT:-200}
(
	while sleep 5; do
		n=$(grep -cE 'WARNING:|BUG:' "$out/console.log" 2>/dev/null || true)
		if [ "${n:-0}" -gt "$storm_limit" ]; then
			echo "run-vm: more than $storm_limit kernel reports: VM stopped" >"$out/storm"
			pkill -f -- "path=$out,security_model" || true
			break
		fi
	done
) &
watcher=$!

numa=()
if [ -n "${VM_NUMA_NODE1:-}" ]; then
	case "$mem" in
	*G) total=$((${mem%G} * 1024)) ;;
	*M) total=${mem%M} ;;
	*) total=$mem ;;
	esac
	numa=(-object "memory-backend-ram,id=m0,size=$((total - VM_NUMA_NODE1))M"
	      -object "memory-backend-ram,id=m1,size=${VM_NUMA_NODE1}M"
	      -numa "node,nodeid=0,cpus=0-$((${VM_SMP:-2} - 1)),memdev=m0"
	      -numa "node,nodeid=1,memdev=m1")
fi

smp=${VM_SMP:-2}
if [ "${VM_NUMA_SPLIT:-0}" = 1 ]; then
	case "$mem" in
	*G) total=$((${mem%G} * 1024)) ;;
	*M) total=${mem%M} ;;
	*) total=$mem ;;
	esac
	smp=2,sockets=2,cores=1,threads=1
	numa=(-object "memory-backend-ram,id=m0,size=$((total / 2))M"
	      -object "memory-backend-ram,id=m1,size=$((total - total / 2))M"
	      -numa "node,nodeid=0,cpus=0,memdev=m0"
	      -numa "node,nodeid=1,cpus=1,memdev=m1")
fi
ivshmem=()
if [ -n "${VM_IVSHMEM:-}" ]; then
	# Bus 1 behind the root port in slot 1 of q35's root bus.
	# ivshmem0-spare: a device plugged back after device_del needs a memory
	# backend of its own (qemu 7.2 asserts on a backend used before).
	ivshmem=(-object "memory-backend-ram,id=ivshmem0-mem,size=${VM_IVSHMEM}M,share=on"
		 -object "memory-backend-ram,id=ivshmem0-spare,size=${VM_IVSHMEM}M,share=on"
		 -device "pcie-root-port,id=ivshmem0-port,chassis=1,slot=1"
		 -device "ivshmem-plain,memdev=ivshmem0-mem,bus=ivshmem0-port,id=ivshmem0")
	echo "0000:01:00.0" > "$out/ivshmem-address"
	# Hot-unplug and plug from the guest: its requests relayed to qemu's QMP.
	rm -f "$out/qmp.sock" "$out/qmp-request" "$out/qmp-reply"
	ivshmem+=(-qmp "unix:$out/qmp.sock,server=on,wait=off")
	/usr/bin/python3 "$here/qmp-relay.py" "$out" &
	relay=$!
fi

set +e
if [ "${VM_QUIET:-0}" = 1 ]; then sink=/dev/null; else sink=/dev/stdout; fi
timeout --foreground -k 10 "$tmo" qemu-system-x86_64 \
	-machine q35 -cpu max -smp "$smp" -m "$mem" -accel tcg "${numa[@]}" "${ivshmem[@]}" \
	-nodefaults -no-reboot -display none -monitor none \
	-chardev stdio,id=con,signal=off -serial chardev:con \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
	-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
	-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
	-fsdev local,id=out,path="$out",security_model=none,multidevs=remap \
	-device virtio-9p-pci,fsdev=out,mount_tag=out \
	-kernel "$kimg" -initrd "$irf" -append "$append" </dev/null 2>&1 |
	tee "$out/console.log" > "$sink"
qrc=${PIPESTATUS[0]}
kill "$watcher" ${relay:-} 2>/dev/null
wait "$watcher" ${relay:-} 2>/dev/null
set -e
[ -f "$out/storm" ] && cat "$out/storm" >&2

bad=$(cat "$out/console.log" "$out/dmesg.txt" 2>/dev/null | grep -E "$pat" | head -n 5 || true)
if [ -n "$bad" ] && [ -n "${VM_REPORTS_JUDGED_BY:-}" ]; then
	echo "run-vm: the kernel log has reports; $VM_REPORTS_JUDGED_BY judges them" >&2
elif [ -n "$bad" ]; then
	echo "run-vm: kernel problem (see $out/console.log, $out/dmesg.txt):" >&2
	printf '  %s\n' "$bad" >&2
	exit 125
fi
case "$qrc" in
1) exit 0 ;;
3) exit 1 ;;
124|137) echo "run-vm: timed out after ${tmo}s (see $out/console.log)" >&2; exit 124 ;;
*) echo "run-vm: the VM ended without reporting a status (qemu exit $qrc): panic or crash, see $out/console.log" >&2
   exit 125 ;;
esac
