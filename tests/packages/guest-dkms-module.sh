#!/bin/sh
# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# guest-dkms-module.sh - inside the test VM: load the npushm.ko that DKMS
# built from the npushm-dkms package, with the parameters of the package's
# modprobe.d example, check the device, the version and the parameters, mount
# the instance as the package's run-npushm.mount unit does, list the pool with
# the packaged npushm command and libraries, unmount, unload.
#
#   guest-dkms-module.sh ROOT KO VERSION
# ROOT: the packages' files unpacked; KO: the DKMS-built module. Prints
# "guest: ..." lines; exits 0 only if every check held.
root=$1 ko=$2 version=$3
fail() { echo "guest: FAILED: $*"; rmmod npushm 2>/dev/null; exit 1; }
params=$(sed -n 's/^#options npushm //p' "$root/etc/modprobe.d/npushm.conf")
[ -n "$params" ] || fail "no example options line in modprobe.d/npushm.conf"
# shellcheck disable=SC2086
insmod "$ko" $params || fail "insmod $ko $params"
echo "guest: loaded $ko with $params"
[ -c /dev/npushm ] || fail "/dev/npushm did not appear"
v=$(cat /sys/module/npushm/version)
[ "$v" = "$version" ] || fail "/sys/module/npushm/version is '$v', not $version"
echo "guest: /sys/module/npushm/version is $v"
for p in $params; do
	name=${p%%=*} want=$(numfmt --from=iec "${p#*=}")
	got=$(cat "/sys/module/npushm/parameters/$name")
	[ "$got" = "$want" ] || fail "parameter $name is $got, not $want"
	echo "guest: parameter $name = $got"
done
unit=$root/lib/systemd/system/run-npushm.mount
[ -f "$unit" ] || fail "no run-npushm.mount unit in the package"
what=$(sed -n 's/^What=//p' "$unit") where=$(sed -n 's/^Where=//p' "$unit")
type=$(sed -n 's/^Type=//p' "$unit") opts=$(sed -n 's/^Options=//p' "$unit")
[ "$where" = /run/npushm ] || fail "run-npushm.mount mounts at '$where', not /run/npushm"
mkdir -p "$where"
mount -t "$type" -o "$opts" "$what" "$where" || fail "mount -t $type -o $opts $what $where"
echo "guest: mounted the instance as run-npushm.mount does ($type, $opts)"
mode=$(stat -c %a "$where")
[ "$mode" = 1777 ] || fail "the instance's root has mode $mode, not 1777"
out=$(LD_LIBRARY_PATH=$root/usr/lib/$(cc -print-multiarch) "$root/usr/bin/npushm" --backend kmod ls --json) ||
	fail "the packaged npushm cannot list the module's pool: $out"
echo "$out" | grep -q '"backend": *"kmod"' || fail "npushm ls did not use the module: $out"
cap=$(cat /sys/module/npushm/parameters/capacity)
echo "$out" | grep -q "\"capacity\": *$cap" || fail "npushm ls reports another capacity than $cap: $out"
echo "guest: the packaged npushm lists the module's pool"
umount "$where" || fail "umount $where"
rmmod npushm || fail "rmmod npushm"
echo "guest: unloaded"
