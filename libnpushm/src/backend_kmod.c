/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * backend_kmod.c - regions from the npushm kernel module: files of an npushm
 * filesystem instance ($NPUSHM_DIR, default NPUSHM_MOUNT_PATH, /run/npushm).
 *
 * Like the posix backend, this is a directory of region files (the code
 * both share is backend_dir.c): a region is an O_TMPFILE file sized with
 * ftruncate (the module reserves its memory then), a name is a link, the
 * kernel checks every permission. What the module adds is here: real seals
 * (NPUSHM_IOC_SEAL, pins included), dma-buf export, per-region counts and
 * pinned bytes (NPUSHM_IOC_INFO, and generic netlink for listing,
 * kmod_netlink.c), the pool's capacity and quotas (/dev/npushm when the
 * caller may open it, else netlink). Every ioctl struct is passed at the
 * size this library was built with, and every errno the UAPI documents
 * becomes a status with a message that says what to do.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/npushm.h>

#include "internal.h"

#define KMOD_CHUNK_SIZE	(2ull << 20)	/* when /dev/npushm cannot tell */

/* The kernel's new_encode_dev() of st_dev, decoded. */
static dev_t decode_dev(uint32_t d)
{
	return makedev((d >> 8) & 0xfff, (d & 0xff) | ((d >> 12) & 0xfff00));
}

static const char *kmod_dir(void)
{
	const char *dir = getenv("NPUSHM_DIR");

	return dir && *dir ? dir : NPUSHM_MOUNT_PATH;
}

/**
 * npi_kmod_mounted - is there an npushm instance where the kmod backend looks?
 *
 * Return: true when $NPUSHM_DIR (or /run/npushm) is an npushm mount.
 */
bool npi_kmod_mounted(void)
{
	struct statfs sfs;

	return !statfs(kmod_dir(), &sfs) && sfs.f_type == NPUSHM_FS_MAGIC;
}

static npushm_status_t query(npushm_dev_t *dev, struct npushm_query *q)
{
	memset(q, 0, sizeof(*q));
	if (dev->ctl < 0 || ioctl(dev->ctl, NPUSHM_IOC_QUERY, q))
		return npi_fail(npi_status_from_errno(errno), errno,
				"kmod backend: NPUSHM_IOC_QUERY on %s failed", NPUSHM_DEVICE_PATH);
	return NPUSHM_OK;
}

static npushm_status_t kmod_dev_open(npushm_dev_t *dev)
{
	const char *dir = kmod_dir();
	struct npushm_query q;
	struct statfs sfs;
	npushm_status_t st;

	dev->prefix = "";
	dev->ctl = -1;
	dev->chunk_size = KMOD_CHUNK_SIZE;
	if (statfs(dir, &sfs) || sfs.f_type != NPUSHM_FS_MAGIC) {
		int err = errno;

		if (access(NPUSHM_DEVICE_PATH, F_OK))
			return npi_fail(NPUSHM_ERR_NO_DEVICE, err,
					"kmod backend: the npushm module is not loaded (no %s); load it (modprobe npushm), mount an instance (mount -t npushm npushm %s) or set NPUSHM_BACKEND=posix",
					NPUSHM_DEVICE_PATH, dir);
		return npi_fail(NPUSHM_ERR_NO_DEVICE, err,
				"kmod backend: %s is not an npushm filesystem; mount one there (mount -t npushm npushm %s), set NPUSHM_DIR to where one is mounted, or set NPUSHM_BACKEND=posix",
				dir, dir);
	}
	st = npi_dir_open(dev, dir);
	if (st)
		return st;
	/* The device only adds the pool's figures: optional (mode 0660). */
	dev->ctl = open(NPUSHM_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	if (dev->ctl >= 0 && query(dev, &q) == NPUSHM_OK) {
		if (q.abi_version != NPUSHM_ABI_VERSION) {
			close(dev->ctl);
			dev->ctl = -1;
			close(dev->fd);
			dev->fd = -1;
			return npi_fail(NPUSHM_ERR_NO_DEVICE, 0,
					"kmod backend: the module speaks ABI %u but this library ABI %u; rebuild one of them",
					q.abi_version, NPUSHM_ABI_VERSION);
		}
		if (q.page_size > dev->page_size)
			dev->page_size = q.page_size;
		dev->chunk_size = q.chunk_size;
	} else if (dev->ctl >= 0) {
		close(dev->ctl);
		dev->ctl = -1;
	}
	return NPUSHM_OK;
}

static void kmod_dev_close(npushm_dev_t *dev)
{
	if (dev->fd >= 0)
		close(dev->fd);
	if (dev->ctl >= 0)
		close(dev->ctl);
	dev->fd = -1;
	dev->ctl = -1;
}

static npushm_status_t kmod_dev_query(npushm_dev_t *dev, npushm_dev_info_t *info)
{
	struct npi_kmod_stats ks;
	struct npushm_query q;
	npushm_status_t st;

	info->abi_version = NPUSHM_ABI_VERSION;
	info->features = NPUSHM_FEATURE_NAMES | NPUSHM_FEATURE_SEAL | NPUSHM_FEATURE_DMABUF |
			 NPUSHM_FEATURE_GUP | NPUSHM_FEATURE_NETLINK | NPUSHM_FEATURE_SEAL_ENFORCED |
			 NPUSHM_FEATURE_PINS;
	info->page_size = dev->page_size;
	info->chunk_size = dev->chunk_size;
	if (dev->ctl >= 0 && query(dev, &q) == NPUSHM_OK) {
		if (q.features & NPUSHM_FEAT_WATCH)
			info->features |= NPUSHM_FEATURE_WATCH;
		info->capacity = q.capacity;
		info->in_use = q.in_use;
		info->uid_quota = q.uid_quota;
		info->uid_in_use = q.uid_in_use;
		info->regions = q.regions;
		return NPUSHM_OK;
	}
	st = npi_kmod_netlink_stats(&ks);
	if (st)
		return st;
	info->capacity = ks.capacity;
	info->in_use = ks.in_use;
	info->uid_quota = ks.uid_quota;
	info->uid_in_use = ks.uid_in_use;
	info->regions = ks.regions;
	return NPUSHM_OK;
}

static npushm_status_t kmod_info_raw(int fd, struct npushm_region_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	if (ioctl(fd, NPUSHM_IOC_INFO, ri))
		return npi_fail(errno == ENOTTY || errno == EINVAL || errno == EBADF ?
				NPUSHM_ERR_INVALID : npi_status_from_errno(errno), errno,
				"descriptor %d is not an npushm region (NPUSHM_IOC_INFO failed)", fd);
	return NPUSHM_OK;
}

/* The pool's figures for a message: best effort. */
static void pool_figures(npushm_dev_t *dev, npushm_dev_info_t *di)
{
	memset(di, 0, sizeof(*di));
	if (kmod_dev_query(dev, di))
		memset(di, 0, sizeof(*di));
}

static npushm_status_t kmod_size(npushm_dev_t *dev, npushm_region_t *r, uint64_t size)
{
	npushm_dev_info_t di;
	int err, ret;

	if (!npi_alloc_node_bind())
		return npi_fail(NPUSHM_ERR_UNSUPPORTED, errno,
				"the kernel refuses to bind memory to NUMA node %d", npi_alloc_node);
	ret = ftruncate(r->fd, (off_t)size);
	err = errno;
	npi_alloc_node_unbind();
	if (!ret)
		return NPUSHM_OK;
	pool_figures(dev, &di);
	if (err == ENOSPC)
		return npi_fail(NPUSHM_ERR_NO_SPACE, err,
				"the npushm pool (or the instance %s) has no room for %llu bytes (pool capacity %llu, in use %llu); free regions, or raise the module's capacity or the instance's size=",
				dev->dir, (unsigned long long)size, (unsigned long long)di.capacity,
				(unsigned long long)di.in_use);
	if (err == EDQUOT)
		return npi_fail(NPUSHM_ERR_QUOTA, err,
				"allocating %llu bytes would put uid %u over its quota (%llu of %llu bytes in use)",
				(unsigned long long)size, (unsigned)geteuid(),
				(unsigned long long)di.uid_in_use, (unsigned long long)di.uid_quota);
	if (err == ENOMEM)
		return npi_fail(NPUSHM_ERR_NO_SPACE, err,
				"the machine (or this process's memory cgroup) cannot give %llu bytes to the npushm pool now",
				(unsigned long long)size);
	if (err == EFBIG || err == EINVAL)
		return npi_fail(NPUSHM_ERR_INVALID, err, "the module refused a region of %llu bytes",
				(unsigned long long)size);
	return npi_fail(npi_status_from_errno(err), err, "cannot allocate %llu bytes",
			(unsigned long long)size);
}

static npushm_status_t fill_from_fd(npushm_region_t *r)
{
	struct npushm_region_info ri;
	npushm_status_t st = kmod_info_raw(r->fd, &ri);

	if (st)
		return st;
	r->id = ri.id;
	r->size = ri.size;
	r->writable = ri.flags & NPUSHM_INFO_WRITABLE;
	return NPUSHM_OK;
}

static npushm_status_t kmod_region_alloc(npushm_dev_t *dev, uint64_t size, uint32_t flags,
					 npushm_region_t *r)
{
	npushm_status_t st;

	(void)flags;	/* LAZY: the module always allocates when the size is set */
	st = npi_dir_tmpfile(dev, &r->fd);
	if (st)
		return st;
	st = kmod_size(dev, r, size);
	if (st)
		return st;
	return fill_from_fd(r);
}

static npushm_status_t kmod_region_open(npushm_dev_t *dev, const char *name, uint32_t flags,
					npushm_region_t *r)
{
	npushm_status_t st = npi_dir_region_open(dev, name, flags, &r->fd);

	if (st)
		return st;
	st = fill_from_fd(r);
	if (!st && !r->size)
		return npi_fail(NPUSHM_ERR_CORRUPT, 0,
				"region '%s' has no size yet: whoever made it has not sized it with ftruncate", name);
	return st;
}

static npushm_status_t kmod_region_import(npushm_dev_t *dev, npushm_region_t *r)
{
	(void)dev;
	return fill_from_fd(r);
}

static npushm_status_t kmod_name_unlink(npushm_dev_t *dev, const char *name)
{
	return npi_dir_name_unlink(dev, name);
}

static npushm_status_t kmod_region_sealed(npushm_region_t *r, bool *sealed)
{
	struct npushm_region_info ri;
	npushm_status_t st = kmod_info_raw(r->fd, &ri);

	if (st)
		return st;
	*sealed = ri.flags & NPUSHM_INFO_SEALED;
	return NPUSHM_OK;
}

static npushm_status_t kmod_region_publish(npushm_region_t *r, const char *name, uint32_t mode,
					   uint32_t flags)
{
	bool sealed = false;
	npushm_status_t st;

	st = kmod_region_sealed(r, &sealed);
	if (st)
		return st;
	if (!r->writable && !sealed)
		return npi_fail(NPUSHM_ERR_ACCESS, EACCES,
				"publishing region %llu as '%s' needs a read-write handle unless the region is sealed",
				(unsigned long long)r->id, name);
	return npi_dir_publish(r, name, mode, flags);
}

static npushm_status_t kmod_region_seal(npushm_region_t *r)
{
	struct npushm_seal s = { .seals = NPUSHM_SEAL_WRITE };

	if (ioctl(r->fd, NPUSHM_IOC_SEAL, &s)) {
		int err = errno;

		if (err == EBUSY)
			return npi_fail(NPUSHM_ERR_BUSY, err,
					"cannot seal region %llu while a writable mapping, a writable export or a pin (an RDMA MR, O_DIRECT in flight) of it exists; unmap and unregister it first",
					(unsigned long long)r->id);
		if (err == EACCES || err == EPERM || err == EBADF)
			return npi_fail(NPUSHM_ERR_ACCESS, err,
					"cannot seal region %llu through a read-only handle",
					(unsigned long long)r->id);
		return npi_fail(npi_status_from_errno(err), err, "cannot seal region %llu",
				(unsigned long long)r->id);
	}
	return NPUSHM_OK;
}

static npushm_status_t kmod_region_export_dmabuf(npushm_region_t *r, uint32_t flags, int *fdp)
{
	struct npushm_export e = { .flags = (flags & NPUSHM_EXPORT_WRITE) ? NPUSHM_EXPORT_RDWR : 0 };

	if (ioctl(r->fd, NPUSHM_IOC_EXPORT_DMABUF, &e)) {
		int err = errno;

		if (err == EACCES || err == EPERM || err == EBADF)
			return npi_fail(NPUSHM_ERR_ACCESS, err,
					"cannot export region %llu as a writable dma-buf: the handle is read-only or the region sealed",
					(unsigned long long)r->id);
		return npi_fail(npi_status_from_errno(err), err, "cannot export region %llu as a dma-buf",
				(unsigned long long)r->id);
	}
	*fdp = e.fd;
	return NPUSHM_OK;
}

static npushm_status_t kmod_region_info(npushm_region_t *r, npushm_region_info_t *info)
{
	struct npushm_region_info ri;
	npushm_status_t st = kmod_info_raw(r->fd, &ri);

	if (st)
		return st;
	info->id = ri.id;
	info->size = ri.size;
	info->flags = ((ri.flags & NPUSHM_INFO_SEALED) ? NPUSHM_REGION_SEALED : 0) |
		      ((ri.flags & NPUSHM_INFO_NAMED) ?
		       NPUSHM_REGION_NAMED | NPUSHM_REGION_PERSISTENT : 0) |
		      ((ri.flags & NPUSHM_INFO_WRITABLE) ? NPUSHM_REGION_WRITABLE : 0);
	info->owner_uid = ri.owner_uid;
	info->owner_gid = ri.owner_gid;
	info->mode = ri.names ? ri.mode : 0;
	info->handles = ri.handles;
	info->mappings = ri.mappings;
	info->dmabufs = ri.dmabufs;
	info->names = ri.names;
	info->mapped_bytes = ri.mapped_bytes;
	ri.name[NPUSHM_NAME_MAX] = '\0';
	/* The preferred name in our instance, as on posix; else the file's own. */
	if (ri.names && decode_dev(ri.dev) == r->dev->dir_dev)
		return npi_dir_first_name(r->dev, (ino_t)ri.id, info->name, sizeof(info->name));
	memcpy(info->name, ri.name, sizeof(info->name));
	return NPUSHM_OK;
}

/* The module's counts for @e, through a read-only file when we may open one. */
static void counts_from_info(npushm_dev_t *dev, npushm_region_entry_t *e)
{
	struct npushm_region_info ri;
	int fd;

	if (!e->name_count || npi_dir_region_open(dev, e->names[0].name, 0, &fd))
		return;
	if (!kmod_info_raw(fd, &ri) && ri.id == e->id) {
		/* Not counting the file this look takes. */
		e->handles = ri.handles ? ri.handles - 1 : 0;
		e->mappings = ri.mappings;
		e->dmabufs = ri.dmabufs;
		e->mappers = ri.mappers;
		e->mapped_bytes = ri.mapped_bytes;
		e->pinned_bytes = ri.pinned_bytes;
		/* Empty from a module whose info struct has no provider yet. */
		memcpy(e->provider, ri.provider, sizeof(e->provider));
		e->provider[sizeof(e->provider) - 1] = '\0';
		memcpy(e->device, ri.device, sizeof(e->device));
		e->device[sizeof(e->device) - 1] = '\0';
		if (ri.flags & NPUSHM_INFO_SEALED)
			e->flags |= NPUSHM_REGION_SEALED;
	}
	close(fd);
}

static void counts_from_netlink(npushm_region_entry_t *e, const struct npi_kmod_region *k)
{
	e->size = k->size;
	e->handles = k->handles;
	e->mappings = k->mappings;
	e->dmabufs = k->dmabufs;
	e->mappers = k->mappers;
	e->mapped_bytes = k->mapped_bytes;
	e->pinned_bytes = k->pinned_bytes;
	memcpy(e->provider, k->provider, sizeof(e->provider));
	memcpy(e->device, k->device, sizeof(e->device));
	if (k->sealed)
		e->flags |= NPUSHM_REGION_SEALED;
}

/*
 * Names come from the directory; counts from the module: its netlink dump
 * covers the regions the caller owns (every region for an administrator),
 * the info ioctl the others it may open. Unnamed regions of the dump that
 * live in this instance or are anonymous are listed too, without names.
 */
static npushm_status_t kmod_list_regions(npushm_dev_t *dev, struct npushm_region_list *list)
{
	struct npi_kmod_region *k = NULL;
	npushm_status_t st;
	size_t n = 0, i, j;
	struct npi_saved_error saved;

	st = npi_dir_list_names(dev, list);
	if (st)
		return st;
	npi_error_save(&saved);
	if (npi_kmod_netlink_regions(&k, &n)) {
		npi_error_restore(&saved);
		n = 0;
	}
	for (i = 0; i < list->count; i++) {
		for (j = 0; j < n; j++)
			if (k[j].id == list->entries[i].id)
				break;
		if (j < n)
			counts_from_netlink(&list->entries[i], &k[j]);
		else
			counts_from_info(dev, &list->entries[i]);
	}
	for (j = 0; j < n; j++) {
		npushm_region_entry_t *e;

		if (k[j].names || !k[j].size || (decode_dev(k[j].dev) != dev->dir_dev && !k[j].anonymous))
			continue;
		e = npi_list_add(list);
		if (!e) {
			free(k);
			return NPUSHM_ERR_NO_MEMORY;
		}
		e->id = k[j].id;
		e->owner_uid = k[j].owner_uid;
		e->owner_gid = k[j].owner_gid;
		counts_from_netlink(e, &k[j]);
	}
	free(k);
	return NPUSHM_OK;
}

const struct npi_backend_ops npi_kmod_ops = {
	.name = "kmod",
	.dev_open = kmod_dev_open,
	.dev_close = kmod_dev_close,
	.dev_query = kmod_dev_query,
	.region_alloc = kmod_region_alloc,
	.region_open = kmod_region_open,
	.region_import = kmod_region_import,
	.name_unlink = kmod_name_unlink,
	.region_publish = kmod_region_publish,
	.region_seal = kmod_region_seal,
	.region_sealed = kmod_region_sealed,
	.region_export_dmabuf = kmod_region_export_dmabuf,
	.region_info = kmod_region_info,
	.region_write = NULL,
	.list_regions = kmod_list_regions,
};
