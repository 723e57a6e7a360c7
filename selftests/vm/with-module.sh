#!/bin/sh
# with-module.sh - inside the test VM: load the freshly built npushm.ko with the
# test parameters, run a command, then unload the module (rmmod must succeed).
#
#   with-module.sh COMMAND [ARGS...]
#
# Module parameters for tests come from NPUSHM_TEST_PARAMS (default below).
# Exit status: the command's, or 1 if loading or unloading the module failed.
here=$(cd "$(dirname "$0")/../.." && pwd)
params=${NPUSHM_TEST_PARAMS:-capacity=512M uid_quota=256M test_importer=1}
# shellcheck disable=SC2086
insmod "$here/kmod/npushm.ko" $params || { echo "with-module: insmod npushm.ko $params failed"; exit 1; }
[ -c /dev/npushm ] || { echo "with-module: /dev/npushm did not appear"; rmmod npushm; exit 1; }
chmod 0666 /dev/npushm
"$@"
rc=$?
if ! rmmod npushm; then
	echo "with-module: rmmod npushm failed (something still holds the module)"
	rc=1
fi
exit $rc
