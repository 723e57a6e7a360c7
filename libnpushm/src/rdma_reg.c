/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * rdma_reg.c - npushm_region_reg_mr(): a region (or part of it) as an RDMA
 * memory region of the caller's protection domain.
 *
 * Path: a dma-buf MR (npushm_region_export_dmabuf + ibv_reg_dmabuf_mr) when
 * the backend exports dma-bufs and the device takes them, else ibv_reg_mr on
 * a mapping (npushm_region_map). Whether a device takes dma-bufs is learnt
 * from its first attempt and kept in a small per-process table (probe once).
 * Both paths map the region, so the MR's address is a CPU pointer either way
 * (the dma-buf MR is registered with that pointer as its iova).
 *
 * Rights: a writable MR needs a read-write handle of an unsealed region; the
 * check here gives the clear message, the kernel enforces it (a writable MR
 * is built on a writable mapping or export, which a sealed region or a
 * read-only handle cannot give, and which keeps the region from being sealed
 * while it exists).
 *
 * libibverbs is opened with dlopen at the first registration, never linked:
 * the caller's protection domain comes from the libibverbs.so.1 already in
 * the process, and hosts without rdma-core use everything else unchanged.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "internal.h"
#include "npushm_rdma.h"

struct npushm_mr {
	npushm_region_t *r;	/* our own handle on the region */
	void *map;		/* the whole region, mapped with the MR's protection */
	struct ibv_mr *mr;
	npushm_mr_info_t info;
};

/* ------------------------------------------------------------ libibverbs */

static struct {
	void *lib;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t length,
					uint64_t iova, int fd, int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	char why[256];
} V;
static pthread_once_t v_once = PTHREAD_ONCE_INIT;

static void verbs_load(void)
{
	const char *e;

	V.lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!V.lib) {
		e = dlerror();
		snprintf(V.why, sizeof(V.why), "%s", e ? e : "dlopen failed");
		return;
	}
	*(void **)&V.reg_mr = dlsym(V.lib, "ibv_reg_mr");
	*(void **)&V.dereg_mr = dlsym(V.lib, "ibv_dereg_mr");
	/* rdma-core 34 and later */
	*(void **)&V.reg_dmabuf_mr = dlsym(V.lib, "ibv_reg_dmabuf_mr");
	if (!V.reg_mr || !V.dereg_mr) {
		snprintf(V.why, sizeof(V.why), "libibverbs.so.1 lacks ibv_reg_mr/ibv_dereg_mr");
		dlclose(V.lib);
		V.lib = NULL;
	}
}

/* ----------------------------------------------- dma-buf probe, per device */

enum { PROBE_UNKNOWN, PROBE_YES, PROBE_NO };

#define PROBE_SLOTS 32
static struct probe {
	const struct ibv_device *dev;
	int state;
	int err;
} probes[PROBE_SLOTS];
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;

static struct probe probe_get(const struct ibv_device *dev)
{
	struct probe p = { dev, PROBE_UNKNOWN, 0 };

	pthread_mutex_lock(&probe_lock);
	for (int i = 0; i < PROBE_SLOTS; i++)
		if (probes[i].dev == dev)
			p = probes[i];
	pthread_mutex_unlock(&probe_lock);
	return p;
}

static void probe_set(const struct ibv_device *dev, int state, int err)
{
	pthread_mutex_lock(&probe_lock);
	for (int i = 0; i < PROBE_SLOTS; i++) {
		if (probes[i].dev == dev || !probes[i].dev) {
			probes[i] = (struct probe){ dev, state, err };
			break;
		}
	}
	pthread_mutex_unlock(&probe_lock);
}

/* errnos that say "this device (or kernel) has no dma-buf MRs" */
static bool dmabuf_unsupported(int err)
{
	return err == EOPNOTSUPP || err == EPROTONOSUPPORT || err == ENOSYS || err == ENOTTY;
}

/* ------------------------------------------------------------------- API */

NPUSHM_API const char *npushm_mr_path_name(npushm_mr_path_t path)
{
	switch (path) {
	case NPUSHM_MR_PATH_DMABUF: return "dma-buf";
	case NPUSHM_MR_PATH_MAPPING: return "mapping";
	}
	return "?";
}

static int ibv_access_of(uint32_t access)
{
	int a = 0;

	if (access & NPUSHM_MR_LOCAL_WRITE)
		a |= IBV_ACCESS_LOCAL_WRITE;
	if (access & NPUSHM_MR_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE;
	if (access & NPUSHM_MR_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	return a;
}

static npushm_status_t check_args(npushm_region_t *r, struct ibv_pd *pd, uint64_t offset,
				  uint64_t *length, uint32_t *access, uint32_t flags,
				  npushm_region_info_t *ri)
{
	const uint32_t known = NPUSHM_MR_LOCAL_WRITE | NPUSHM_MR_REMOTE_WRITE | NPUSHM_MR_REMOTE_READ;
	npushm_status_t st;

	if (!r || !pd)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_reg_mr: NULL %s",
				!r ? "region" : "protection domain");
	if (*access & ~known)
		return npi_fail(NPUSHM_ERR_INVALID, 0,
				"npushm_region_reg_mr: unknown access bits 0x%x (NPUSHM_MR_LOCAL_WRITE, _REMOTE_WRITE, _REMOTE_READ)",
				*access & ~known);
	if (flags & ~(NPUSHM_REG_NO_DMABUF | NPUSHM_REG_DMABUF_ONLY))
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_reg_mr: unknown flags 0x%x",
				flags & ~(NPUSHM_REG_NO_DMABUF | NPUSHM_REG_DMABUF_ONLY));
	if ((flags & NPUSHM_REG_NO_DMABUF) && (flags & NPUSHM_REG_DMABUF_ONLY))
		return npi_fail(NPUSHM_ERR_INVALID, 0,
				"npushm_region_reg_mr: NPUSHM_REG_NO_DMABUF and NPUSHM_REG_DMABUF_ONLY exclude each other");
	/* verbs: remote write needs local write */
	if (*access & NPUSHM_MR_REMOTE_WRITE)
		*access |= NPUSHM_MR_LOCAL_WRITE;
	st = npushm_region_info(r, ri);
	if (st)
		return st;
	if (offset >= ri->size || *length > ri->size - offset)
		return npi_fail(NPUSHM_ERR_INVALID, 0,
				"cannot register bytes %llu..%llu of region %llu: it has %llu bytes",
				(unsigned long long)offset,
				(unsigned long long)(offset + (*length ? *length : 1)),
				(unsigned long long)ri->id, (unsigned long long)ri->size);
	if (!*length)
		*length = ri->size - offset;
	if (!(*access & NPUSHM_MR_LOCAL_WRITE))
		return NPUSHM_OK;
	if (!npushm_region_writable(r))
		return npi_fail(NPUSHM_ERR_ACCESS, EACCES,
				"region %llu: a read-only handle cannot give a writable memory region (%s); register it read-only (access NPUSHM_MR_REMOTE_READ or 0) or open it with NPUSHM_OPEN_WRITE",
				(unsigned long long)ri->id,
				*access & NPUSHM_MR_REMOTE_WRITE ? "remote write" : "local write");
	if (ri->flags & NPUSHM_REGION_SEALED)
		return npi_fail(NPUSHM_ERR_SEALED, EPERM,
				"region %llu is sealed: it can only be registered read-only (access NPUSHM_MR_REMOTE_READ or 0), never writable",
				(unsigned long long)ri->id);
	return NPUSHM_OK;
}

/*
 * The dma-buf attempt: true with m->mr set, or false with the reason in
 * m->info.reason (and *hard set when the caller asked for dma-buf only and
 * the failure is an error of its own rather than "no dma-buf MRs here").
 */
static bool try_dmabuf(npushm_mr_t *m, struct ibv_pd *pd, int ibv_access, bool writable)
{
	npushm_mr_info_t *mi = &m->info;
	const struct ibv_device *dev = pd->context->device;
	npushm_dev_info_t di;
	struct probe p;
	int fd, err;

	if (npushm_dev_query(m->r->dev, &di) != NPUSHM_OK || !(di.features & NPUSHM_FEATURE_DMABUF)) {
		snprintf(mi->reason, sizeof(mi->reason),
			 "the %s backend cannot export dma-bufs: ibv_reg_mr on a mapping",
			 npushm_backend_name(npushm_dev_backend(m->r->dev)));
		return false;
	}
	if (!V.reg_dmabuf_mr) {
		snprintf(mi->reason, sizeof(mi->reason),
			 "libibverbs has no ibv_reg_dmabuf_mr (rdma-core older than 34): ibv_reg_mr on a mapping");
		return false;
	}
	p = probe_get(dev);
	if (p.state == PROBE_NO) {
		snprintf(mi->reason, sizeof(mi->reason),
			 "%s cannot register dma-bufs (ibv_reg_dmabuf_mr: %s, found at its first registration): ibv_reg_mr on a mapping",
			 mi->device, strerror(p.err));
		return false;
	}
	if (npushm_region_export_dmabuf(m->r, writable ? NPUSHM_EXPORT_WRITE : 0, &fd) != NPUSHM_OK) {
		snprintf(mi->reason, sizeof(mi->reason),
			 "exporting the region as a dma-buf failed (%s): ibv_reg_mr on a mapping",
			 npushm_last_error());
		return false;
	}
	m->mr = V.reg_dmabuf_mr(pd, mi->offset, mi->length, (uintptr_t)mi->addr, fd, ibv_access);
	err = errno;
	/* the MR holds its own reference on the dma-buf */
	close(fd);
	if (m->mr) {
		probe_set(dev, PROBE_YES, 0);
		snprintf(mi->reason, sizeof(mi->reason), "%s registers dma-bufs", mi->device);
		return true;
	}
	if (dmabuf_unsupported(err)) {
		probe_set(dev, PROBE_NO, err);
		snprintf(mi->reason, sizeof(mi->reason),
			 "%s cannot register dma-bufs (ibv_reg_dmabuf_mr: %s): ibv_reg_mr on a mapping",
			 mi->device, strerror(err));
	} else {
		snprintf(mi->reason, sizeof(mi->reason),
			 "ibv_reg_dmabuf_mr on %s failed (%s): ibv_reg_mr on a mapping", mi->device,
			 strerror(err));
	}
	return false;
}

/*
 * ibv_reg_mr on the mapping. Linux before 6.2 pins the pages of every MR, a
 * read-only one too, with FOLL_WRITE | FOLL_FORCE (ib_umem_get), which a
 * read-only shared mapping refuses (EFAULT): a read-only MR of a handle that
 * may map the region writable is then registered on a read-write mapping
 * (the MR itself stays read-only); read-only handles and sealed regions
 * cannot be registered there at all, which is said so.
 */
static npushm_status_t reg_mapping(npushm_mr_t *m, struct ibv_pd *pd, int ibv_access, bool writable,
				   const npushm_region_info_t *ri)
{
	npushm_mr_info_t *mi = &m->info;
	void *rw;
	int err;

	m->mr = V.reg_mr(pd, mi->addr, mi->length, ibv_access);
	if (m->mr)
		return NPUSHM_OK;
	err = errno;
	if (err == EFAULT && !writable) {
		if (!npushm_region_writable(m->r) || (ri->flags & NPUSHM_REGION_SEALED))
			return npi_fail(NPUSHM_ERR_UNSUPPORTED, err,
					"ibv_reg_mr on %s cannot register a read-only mapping of region %llu (%s): this kernel pins every MR for writing (Linux before 6.2); use a device with dma-buf MRs, a newer kernel, or a read-write handle of an unsealed region",
					mi->device, (unsigned long long)ri->id,
					ri->flags & NPUSHM_REGION_SEALED ? "sealed" : "read-only handle");
		if (npushm_region_map(m->r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &rw) == NPUSHM_OK) {
			m->mr = V.reg_mr(pd, (char *)rw + mi->offset, mi->length, ibv_access);
			err = errno;
			if (m->mr) {
				npushm_region_unmap(m->r, m->map);
				m->map = rw;
				mi->addr = (char *)rw + mi->offset;
				snprintf(mi->reason + strlen(mi->reason), sizeof(mi->reason) - strlen(mi->reason),
					 "%s(pinned through a read-write mapping: this kernel pins read-only MRs for writing)",
					 mi->reason[0] ? "; " : "");
				return NPUSHM_OK;
			}
			npushm_region_unmap(m->r, rw);
		}
	}
	return npi_fail(err == ENOMEM ? NPUSHM_ERR_NO_MEMORY : err == EACCES || err == EPERM ||
			err == EFAULT ? NPUSHM_ERR_ACCESS : NPUSHM_ERR_SYSTEM, err,
			"ibv_reg_mr on %s refused %llu bytes of region %llu (%s access)%s", mi->device,
			(unsigned long long)mi->length, (unsigned long long)ri->id,
			writable ? "writable" : "read-only",
			err == ENOMEM ? ": raise the locked-memory limit (ulimit -l)" : "");
}

NPUSHM_API npushm_status_t npushm_region_reg_mr(npushm_region_t *r, struct ibv_pd *pd,
						uint64_t offset, uint64_t length, uint32_t access,
						uint32_t flags, npushm_mr_t **mrp)
{
	npushm_region_info_t ri;
	npushm_mr_t *m;
	npushm_status_t st;
	bool writable;
	int ibv_access;

	if (!mrp)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_reg_mr: NULL mrp");
	*mrp = NULL;
	st = check_args(r, pd, offset, &length, &access, flags, &ri);
	if (st)
		return st;
	pthread_once(&v_once, verbs_load);
	if (!V.lib)
		return npi_fail(NPUSHM_ERR_UNSUPPORTED, 0,
				"RDMA registration needs libibverbs.so.1 (Debian package libibverbs1), which cannot be loaded: %s",
				V.why);
	writable = access & NPUSHM_MR_LOCAL_WRITE;
	ibv_access = ibv_access_of(access);
	m = calloc(1, sizeof(*m));
	if (!m)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate an MR handle");
	/* our own handle: the caller may close theirs while the MR lives */
	st = npushm_region_import_fd(r->dev, npushm_region_fd(r), &m->r);
	if (st)
		goto out_free;
	st = npushm_region_map(m->r, writable ? NPUSHM_PROT_READ | NPUSHM_PROT_WRITE : NPUSHM_PROT_READ,
			       &m->map);
	if (st) {
		npi_error_prefix("cannot register region %llu for RDMA", (unsigned long long)ri.id);
		goto out_close;
	}
	m->info.offset = offset;
	m->info.length = length;
	m->info.addr = (char *)m->map + offset;
	m->info.access = access;
	snprintf(m->info.device, sizeof(m->info.device), "%s", pd->context->device->name);

	if (!(flags & NPUSHM_REG_NO_DMABUF) && try_dmabuf(m, pd, ibv_access, writable)) {
		m->info.path = NPUSHM_MR_PATH_DMABUF;
	} else if (flags & NPUSHM_REG_DMABUF_ONLY) {
		st = npi_fail(NPUSHM_ERR_UNSUPPORTED, EOPNOTSUPP,
			      "region %llu: no dma-buf MR (NPUSHM_REG_DMABUF_ONLY): %s",
			      (unsigned long long)ri.id, m->info.reason);
		goto out_unmap;
	} else {
		if (flags & NPUSHM_REG_NO_DMABUF)
			snprintf(m->info.reason, sizeof(m->info.reason),
				 "NPUSHM_REG_NO_DMABUF: ibv_reg_mr on a mapping");
		st = reg_mapping(m, pd, ibv_access, writable, &ri);
		if (st)
			goto out_unmap;
		m->info.path = NPUSHM_MR_PATH_MAPPING;
	}
	m->info.lkey = m->mr->lkey;
	m->info.rkey = m->mr->rkey;
	m->info.ibv_mr = m->mr;
	npi_log(NPUSHM_LOG_DEBUG, "region %llu registered on %s (%s): %s", (unsigned long long)ri.id,
		m->info.device, npushm_mr_path_name(m->info.path), m->info.reason);
	*mrp = m;
	return NPUSHM_OK;

out_unmap:
	npushm_region_unmap(m->r, m->map);
out_close:
	npushm_region_close(m->r);
out_free:
	free(m);
	return st;
}

NPUSHM_API npushm_status_t npushm_mr_info(const npushm_mr_t *mr, npushm_mr_info_t *info)
{
	if (!mr || !info)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_mr_info: NULL argument");
	*info = mr->info;
	return NPUSHM_OK;
}

NPUSHM_API npushm_status_t npushm_mr_dereg(npushm_mr_t *mr)
{
	npushm_status_t st = NPUSHM_OK;
	int rc;

	if (!mr)
		return NPUSHM_OK;
	rc = V.dereg_mr(mr->mr);
	if (rc)
		st = npi_fail(NPUSHM_ERR_SYSTEM, rc > 0 ? rc : errno,
			      "ibv_dereg_mr on %s failed; the region stays mapped", mr->info.device);
	else
		npushm_region_unmap(mr->r, mr->map);
	npushm_region_close(mr->r);
	free(mr);
	return st;
}
