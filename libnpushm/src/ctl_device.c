/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * ctl_device.c - opening /dev/npushm for one of the module's per-process
 * objects (watches, spaces): the errors a user can act on when the module
 * is absent, the device is closed to them, or the module is too old.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/npushm.h>

#include "internal.h"

npushm_status_t npi_ctl_open(uint64_t feature, const char *what, int *ctlp)
{
	struct npushm_query q = { 0 };
	int ctl, err;

	ctl = open(NPUSHM_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	if (ctl < 0) {
		err = errno;
		if (err == ENOENT || err == ENXIO || err == ENODEV)
			return npi_fail(NPUSHM_ERR_UNSUPPORTED, err,
					"%s need the npushm kernel module, and it is not loaded (no %s): load it with 'modprobe npushm'",
					what, NPUSHM_DEVICE_PATH);
		if (err == EACCES || err == EPERM)
			return npi_fail(NPUSHM_ERR_ACCESS, err,
					"%s need %s, which this user may not open: ask for its group (see the udev rule of the npushm package)",
					what, NPUSHM_DEVICE_PATH);
		return npi_fail(npi_status_from_errno(err), err, "cannot open %s",
				NPUSHM_DEVICE_PATH);
	}
	if (ioctl(ctl, NPUSHM_IOC_QUERY, &q) || !(q.features & feature)) {
		close(ctl);
		return npi_fail(NPUSHM_ERR_UNSUPPORTED, 0,
				"the loaded npushm module has no %s: install and load a newer one",
				what);
	}
	*ctlp = ctl;
	return NPUSHM_OK;
}
