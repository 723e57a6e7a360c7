/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * region.c - the backend-independent half of the region API.
 *
 * Checks arguments and the rules both backends share (names, modes, flags,
 * writable maps need a writable handle of an unsealed region), then calls
 * the backend. A region handle owns one file descriptor; mappings outlive
 * the handle like mmap(2) outlives close(2). The handle remembers the
 * mappings made through it, so that npushm_region_unmap() unmaps only one
 * of them (a stale or foreign address would munmap whatever lies there).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

npushm_region_t *npi_region_new(npushm_dev_t *dev)
{
	npushm_region_t *r = calloc(1, sizeof(*r));

	if (!r) {
		npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate a region handle");
		return NULL;
	}
	npi_dev_ref(dev);
	r->dev = dev;
	r->fd = -1;
	pthread_mutex_init(&r->maps_lock, NULL);
	return r;
}

void npi_region_free_shell(npushm_region_t *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	npi_dev_unref(r->dev);
	pthread_mutex_destroy(&r->maps_lock);
	free(r->maps);
	free(r);
}

/* Remember @p as a mapping of @r; false when out of memory. */
static bool maps_add(npushm_region_t *r, void *p)
{
	bool ok = true;

	pthread_mutex_lock(&r->maps_lock);
	if (r->nmaps == r->maps_cap) {
		size_t cap = r->maps_cap ? 2 * r->maps_cap : 4;
		void **m = realloc(r->maps, cap * sizeof(*m));

		if (m) {
			r->maps = m;
			r->maps_cap = cap;
		}
		ok = m != NULL;
	}
	if (ok)
		r->maps[r->nmaps++] = p;
	pthread_mutex_unlock(&r->maps_lock);
	return ok;
}

NPUSHM_API npushm_status_t npushm_region_alloc(npushm_dev_t *dev, uint64_t size, uint32_t flags,
					       npushm_region_t **rp)
{
	npushm_region_t *r;
	npushm_status_t st;

	if (!dev || !rp)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_alloc: NULL argument");
	*rp = NULL;
	if (size == 0)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "cannot allocate a region of 0 bytes");
	if (size > UINT64_MAX - dev->page_size || size > (uint64_t)INT64_MAX)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "region size %llu is too large",
				(unsigned long long)size);
	if (flags & ~NPUSHM_ALLOC_LAZY)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_alloc: unknown flags 0x%x",
				flags & ~NPUSHM_ALLOC_LAZY);
	r = npi_region_new(dev);
	if (!r)
		return NPUSHM_ERR_NO_MEMORY;
	st = dev->ops->region_alloc(dev, size, flags, r);
	if (st) {
		npi_region_free_shell(r);
		return st;
	}
	*rp = r;
	return NPUSHM_OK;
}

NPUSHM_API npushm_status_t npushm_region_open(npushm_dev_t *dev, const char *name, uint32_t flags,
					      npushm_region_t **rp)
{
	npushm_region_t *r;
	npushm_status_t st;

	if (!dev || !rp)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_open: NULL argument");
	*rp = NULL;
	st = npi_name_check(name);
	if (st)
		return st;
	if (flags & ~NPUSHM_OPEN_WRITE)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_open: unknown flags 0x%x",
				flags & ~NPUSHM_OPEN_WRITE);
	r = npi_region_new(dev);
	if (!r)
		return NPUSHM_ERR_NO_MEMORY;
	st = dev->ops->region_open(dev, name, flags, r);
	if (st) {
		npi_region_free_shell(r);
		return st;
	}
	*rp = r;
	return NPUSHM_OK;
}

NPUSHM_API npushm_status_t npushm_region_import_fd(npushm_dev_t *dev, int fd, npushm_region_t **rp)
{
	npushm_region_t *r;
	npushm_status_t st;

	if (!dev || !rp)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_import_fd: NULL argument");
	*rp = NULL;
	if (fd < 0)
		return npi_fail(NPUSHM_ERR_INVALID, EBADF, "npushm_region_import_fd: fd %d is not open", fd);
	r = npi_region_new(dev);
	if (!r)
		return NPUSHM_ERR_NO_MEMORY;
	r->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (r->fd < 0) {
		st = npi_fail(npi_status_from_errno(errno), errno, "cannot duplicate fd %d", fd);
		npi_region_free_shell(r);
		return st == NPUSHM_ERR_INVALID ? st : NPUSHM_ERR_INVALID;
	}
	st = dev->ops->region_import(dev, r);
	if (st) {
		npi_region_free_shell(r);
		return st;
	}
	*rp = r;
	return NPUSHM_OK;
}

NPUSHM_API void npushm_region_close(npushm_region_t *r)
{
	npi_region_free_shell(r);
}

NPUSHM_API uint64_t npushm_region_size(const npushm_region_t *r)
{
	return r ? r->size : 0;
}

NPUSHM_API uint64_t npushm_region_id(const npushm_region_t *r)
{
	return r ? r->id : 0;
}

NPUSHM_API int npushm_region_fd(const npushm_region_t *r)
{
	return r ? r->fd : -1;
}

NPUSHM_API bool npushm_region_writable(const npushm_region_t *r)
{
	return r && r->writable;
}

NPUSHM_API npushm_status_t npushm_region_map(npushm_region_t *r, uint32_t prot, void **addrp)
{
	int mprot = 0;
	void *p;

	if (!r || !addrp)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_map: NULL argument");
	*addrp = NULL;
	if (!prot || (prot & ~(NPUSHM_PROT_READ | NPUSHM_PROT_WRITE)))
		return npi_fail(NPUSHM_ERR_INVALID, 0,
				"npushm_region_map: protection 0x%x is not READ, WRITE or both", prot);
	if (prot & NPUSHM_PROT_READ)
		mprot |= PROT_READ;
	if (prot & NPUSHM_PROT_WRITE) {
		bool sealed = false;
		npushm_status_t st;

		mprot |= PROT_WRITE;
		if (!r->writable)
			return npi_fail(NPUSHM_ERR_ACCESS, EACCES,
					"cannot map region %llu writable through a read-only handle; open it with NPUSHM_OPEN_WRITE",
					(unsigned long long)r->id);
		st = r->dev->ops->region_sealed(r, &sealed);
		if (st)
			return st;
		if (sealed)
			return npi_fail(NPUSHM_ERR_SEALED, EPERM,
					"cannot map region %llu writable: it is sealed",
					(unsigned long long)r->id);
	}
	p = mmap(NULL, r->size, mprot, MAP_SHARED, r->fd, 0);
	if (p == MAP_FAILED) {
		int err = errno;

		if (err == EPERM)
			return npi_fail(NPUSHM_ERR_SEALED, err, "cannot map region %llu writable: it is sealed",
					(unsigned long long)r->id);
		return npi_fail(npi_status_from_errno(err), err, "cannot map region %llu (%llu bytes)",
				(unsigned long long)r->id, (unsigned long long)r->size);
	}
	if (!maps_add(r, p)) {
		munmap(p, r->size);
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot map region %llu: out of memory",
				(unsigned long long)r->id);
	}
	*addrp = p;
	return NPUSHM_OK;
}

NPUSHM_API npushm_status_t npushm_region_unmap(npushm_region_t *r, void *addr)
{
	npushm_status_t st = NPUSHM_OK;
	size_t i;

	if (!r || !addr)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_unmap: NULL argument");
	pthread_mutex_lock(&r->maps_lock);
	for (i = 0; i < r->nmaps && r->maps[i] != addr; i++)
		;
	if (i == r->nmaps)
		st = npi_fail(NPUSHM_ERR_INVALID, 0,
			      "cannot unmap %p: it is no mapping of region %llu made through this handle (unmapped already?)",
			      addr, (unsigned long long)r->id);
	else if (munmap(addr, r->size))
		st = npi_fail(NPUSHM_ERR_INVALID, errno, "cannot unmap %p", addr);
	else
		r->maps[i] = r->maps[--r->nmaps];
	pthread_mutex_unlock(&r->maps_lock);
	return st;
}

NPUSHM_API npushm_status_t npushm_region_publish(npushm_region_t *r, const char *name,
						 uint32_t mode, uint32_t flags)
{
	npushm_status_t st;

	if (!r)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_publish: NULL region");
	st = npi_name_check(name);
	if (st)
		return st;
	if (mode & ~0666u)
		return npi_fail(NPUSHM_ERR_INVALID, 0,
				"mode %04o for '%s' is not a subset of 0666 (no execute, setuid or sticky bits)",
				mode, name);
	if (flags & ~(NPUSHM_PUBLISH_PERSISTENT | NPUSHM_PUBLISH_REPLACE))
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_publish: unknown flags 0x%x",
				flags & ~(NPUSHM_PUBLISH_PERSISTENT | NPUSHM_PUBLISH_REPLACE));
	return r->dev->ops->region_publish(r, name, mode, flags);
}

NPUSHM_API npushm_status_t npushm_name_unlink(npushm_dev_t *dev, const char *name)
{
	npushm_status_t st;

	if (!dev)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_name_unlink: NULL device");
	st = npi_name_check(name);
	if (st)
		return st;
	return dev->ops->name_unlink(dev, name);
}

NPUSHM_API npushm_status_t npushm_region_seal(npushm_region_t *r)
{
	if (!r)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_seal: NULL region");
	if (!r->writable)
		return npi_fail(NPUSHM_ERR_ACCESS, EACCES,
				"cannot seal region %llu through a read-only handle",
				(unsigned long long)r->id);
	return r->dev->ops->region_seal(r);
}

NPUSHM_API npushm_status_t npushm_region_export_dmabuf(npushm_region_t *r, uint32_t flags, int *fdp)
{
	if (!r || !fdp)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_export_dmabuf: NULL argument");
	*fdp = -1;
	if (flags & ~NPUSHM_EXPORT_WRITE)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_export_dmabuf: unknown flags 0x%x",
				flags & ~NPUSHM_EXPORT_WRITE);
	return r->dev->ops->region_export_dmabuf(r, flags, fdp);
}

NPUSHM_API npushm_status_t npushm_region_info(npushm_region_t *r, npushm_region_info_t *info)
{
	if (!r || !info)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_region_info: NULL argument");
	memset(info, 0, sizeof(*info));
	return r->dev->ops->region_info(r, info);
}
