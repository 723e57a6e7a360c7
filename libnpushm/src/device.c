/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * device.c - choosing and opening a backend.
 *
 * NPUSHM_BACKEND_AUTO resolves to $NPUSHM_BACKEND when set ("kmod",
 * "posix"; anything else is an error rather than a silent fallback), else
 * to kmod when an npushm instance is mounted at $NPUSHM_DIR (default
 * /run/npushm), else posix. The device handle is
 * immutable after npushm_dev_open(), so threads may share it; it is
 * reference counted so that region handles keep it open after
 * npushm_dev_close().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/npushm.h>

#include "internal.h"

NPUSHM_API const char *npushm_backend_name(npushm_backend_t backend)
{
	switch (backend) {
	case NPUSHM_BACKEND_AUTO: return "auto";
	case NPUSHM_BACKEND_KMOD: return "kmod";
	case NPUSHM_BACKEND_POSIX: return "posix";
	}
	return "?";
}

static npushm_status_t resolve_backend(npushm_backend_t *backend)
{
	const char *env = getenv("NPUSHM_BACKEND");

	if (*backend != NPUSHM_BACKEND_AUTO)
		return NPUSHM_OK;
	if (env && *env && strcmp(env, "auto")) {
		if (!strcmp(env, "kmod"))
			*backend = NPUSHM_BACKEND_KMOD;
		else if (!strcmp(env, "posix"))
			*backend = NPUSHM_BACKEND_POSIX;
		else
			return npi_fail(NPUSHM_ERR_INVALID, 0,
					"NPUSHM_BACKEND='%s' names no backend; use 'kmod', 'posix' or 'auto'",
					env);
		return NPUSHM_OK;
	}
	*backend = npi_kmod_mounted() ? NPUSHM_BACKEND_KMOD : NPUSHM_BACKEND_POSIX;
	return NPUSHM_OK;
}

NPUSHM_API npushm_status_t npushm_dev_open(npushm_backend_t backend, npushm_dev_t **devp)
{
	npushm_dev_t *dev;
	npushm_status_t st;
	long pg;

	if (!devp)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_dev_open: devp is NULL");
	*devp = NULL;
	if (backend != NPUSHM_BACKEND_AUTO && backend != NPUSHM_BACKEND_KMOD &&
	    backend != NPUSHM_BACKEND_POSIX)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_dev_open: unknown backend %d", (int)backend);
	st = resolve_backend(&backend);
	if (st)
		return st;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate a device handle");
	atomic_init(&dev->refs, 1);
	dev->backend = backend;
	dev->fd = -1;
	dev->ctl = -1;
	pg = sysconf(_SC_PAGESIZE);
	dev->page_size = pg > 0 ? (uint64_t)pg : 4096;
	dev->ops = backend == NPUSHM_BACKEND_KMOD ? &npi_kmod_ops : &npi_posix_ops;
	st = dev->ops->dev_open(dev);
	if (st) {
		free(dev);
		return st;
	}
	npi_log(NPUSHM_LOG_INFO, "opened the %s backend", dev->ops->name);
	*devp = dev;
	return NPUSHM_OK;
}

void npi_dev_ref(npushm_dev_t *dev)
{
	atomic_fetch_add(&dev->refs, 1);
}

void npi_dev_unref(npushm_dev_t *dev)
{
	if (!dev || atomic_fetch_sub(&dev->refs, 1) != 1)
		return;
	dev->ops->dev_close(dev);
	free(dev);
}

NPUSHM_API void npushm_dev_close(npushm_dev_t *dev)
{
	npi_dev_unref(dev);
}

NPUSHM_API npushm_backend_t npushm_dev_backend(const npushm_dev_t *dev)
{
	return dev ? dev->backend : NPUSHM_BACKEND_AUTO;
}

NPUSHM_API npushm_status_t npushm_dev_query(npushm_dev_t *dev, npushm_dev_info_t *info)
{
	if (!dev || !info)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_dev_query: NULL argument");
	memset(info, 0, sizeof(*info));
	info->backend = dev->backend;
	/* a name is stored as a file name of at most 255 bytes, after the prefix */
	info->max_name_len = NPUSHM_NAME_MAX - (uint32_t)strlen(dev->prefix);
	return dev->ops->dev_query(dev, info);
}
