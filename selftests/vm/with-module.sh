#!/bin/sh
# with-module.sh - inside the test VM: load the freshly built npushm.ko with the
# test parameters and mount an instance at /run/npushm (NPUSHM_MOUNT_OPTS), run
# a command, then unmount and unload the module (both must succeed).
#
#   with-module.sh COMMAND [ARGS...]
#
# Module parameters for tests come from NPUSHM_TEST_PARAMS (default below).
# Exit status: the command's, or 1 if loading or unloading the module failed.
here=$(cd "$(dirname "$0")/../.." && pwd)
params=${NPUSHM_TEST_PARAMS:-capacity=512M uid_quota=256M}
# shellcheck disable=SC2086
insmod "$here/kmod/npushm.ko" $params || { echo "with-module: insmod npushm.ko $params failed"; exit 1; }
[ -c /dev/npushm ] || { echo "with-module: /dev/npushm did not appear"; rmmod npushm; exit 1; }
insmod "$here/kmod/test/npushm_test.ko" || { echo "with-module: insmod npushm_test.ko failed"; rmmod npushm; exit 1; }
mkdir -p /run/npushm
if ! mount -t npushm -o "${NPUSHM_MOUNT_OPTS:-mode=1777}" npushm /run/npushm; then
	echo "with-module: mount -t npushm npushm /run/npushm failed"; rmmod npushm_test npushm; exit 1
fi
"$@"
rc=$?
if ! umount /run/npushm; then
	echo "with-module: umount /run/npushm failed (something still holds the instance)"
	rc=1
fi
rmmod npushm_test
if ! rmmod npushm; then
	echo "with-module: rmmod npushm failed (something still holds the module)"
	rc=1
fi
exit $rc
