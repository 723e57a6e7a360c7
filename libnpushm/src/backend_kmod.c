/* SPDX-License-Identifier: MIT */
/*
 * backend_kmod.c - regions from the npushm kernel module (/dev/npushm).
 *
 * A thin translation of the region API into the ioctls of
 * include/uapi/linux/npushm.h: every struct is passed at the size this
 * library was built with (the module zero-extends older, smaller ones), and
 * every errno the header documents is turned into a status with a message
 * that says what to do. Listing goes through generic netlink
 * (kmod_netlink.c). The module enforces what the posix backend can only
 * approximate: real seals, per-IPC-namespace names, per-name modes,
 * non-persistent names, dma-buf export, quotas.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/npushm.h>

#include "internal.h"

static npushm_status_t query(npushm_dev_t *dev, struct npushm_query *q)
{
	memset(q, 0, sizeof(*q));
	if (ioctl(dev->fd, NPUSHM_IOC_QUERY, q))
		return npi_fail(npi_status_from_errno(errno), errno,
				"kmod backend: NPUSHM_IOC_QUERY on %s failed", NPUSHM_DEVICE_PATH);
	return NPUSHM_OK;
}

static npushm_status_t kmod_dev_open(npushm_dev_t *dev)
{
	struct npushm_query q;
	npushm_status_t st;

	dev->fd = open(NPUSHM_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (dev->fd < 0 && errno == EACCES)
		dev->fd = open(NPUSHM_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	if (dev->fd < 0) {
		int err = errno;

		if (err == ENOENT || err == ENODEV || err == ENXIO)
			return npi_fail(NPUSHM_ERR_NO_DEVICE, err,
					"kmod backend: %s does not exist; load the module (insmod kmod/npushm.ko) or set NPUSHM_BACKEND=posix",
					NPUSHM_DEVICE_PATH);
		if (err == EACCES)
			return npi_fail(NPUSHM_ERR_ACCESS, err,
					"kmod backend: no permission to open %s; ask the administrator for access or set NPUSHM_BACKEND=posix",
					NPUSHM_DEVICE_PATH);
		return npi_fail(NPUSHM_ERR_NO_DEVICE, err, "kmod backend: cannot open %s",
				NPUSHM_DEVICE_PATH);
	}
	st = query(dev, &q);
	if (st) {
		close(dev->fd);
		dev->fd = -1;
		return npi_fail(NPUSHM_ERR_NO_DEVICE, npushm_last_errno(),
				"kmod backend: %s does not answer NPUSHM_IOC_QUERY; is it the npushm module?",
				NPUSHM_DEVICE_PATH);
	}
	if (q.abi_version != NPUSHM_ABI_VERSION) {
		close(dev->fd);
		dev->fd = -1;
		return npi_fail(NPUSHM_ERR_NO_DEVICE, 0,
				"kmod backend: the module speaks ABI %u but this library ABI %u; rebuild one of them",
				q.abi_version, NPUSHM_ABI_VERSION);
	}
	if (q.page_size > dev->page_size)
		dev->page_size = q.page_size;
	return NPUSHM_OK;
}

static void kmod_dev_close(npushm_dev_t *dev)
{
	if (dev->fd >= 0)
		close(dev->fd);
	dev->fd = -1;
}

static npushm_status_t kmod_dev_query(npushm_dev_t *dev, npushm_dev_info_t *info)
{
	struct npushm_query q;
	npushm_status_t st = query(dev, &q);

	if (st)
		return st;
	info->abi_version = q.abi_version;
	info->features = (q.features & 0x1f) | NPUSHM_FEATURE_SEAL_ENFORCED |
			 NPUSHM_FEATURE_NAMESPACED | NPUSHM_FEATURE_NAME_LIFETIME;
	info->capacity = q.capacity;
	info->in_use = q.in_use;
	info->page_size = q.page_size;
	info->chunk_size = q.chunk_size;
	info->uid_quota = q.uid_quota;
	info->uid_in_use = q.uid_in_use;
	info->regions = q.regions;
	info->max_name_len = q.max_name_len;
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

static npushm_status_t kmod_region_alloc(npushm_dev_t *dev, uint64_t size, uint32_t flags,
					 npushm_region_t *r)
{
	struct npushm_alloc a = { .size = size };

	(void)flags;	/* LAZY: the module always allocates up front */
	if (ioctl(dev->fd, NPUSHM_IOC_ALLOC, &a)) {
		int err = errno;
		struct npushm_query q = { 0 };

		ioctl(dev->fd, NPUSHM_IOC_QUERY, &q);
		if (err == ENOMEM)
			return npi_fail(NPUSHM_ERR_NO_SPACE, err,
					"the npushm pool has no room for %llu bytes (capacity %llu, in use %llu); free regions or raise the module's capacity",
					(unsigned long long)size, (unsigned long long)q.capacity,
					(unsigned long long)q.in_use);
		if (err == EDQUOT)
			return npi_fail(NPUSHM_ERR_QUOTA, err,
					"allocating %llu bytes would put uid %u over its quota (%llu of %llu bytes in use)",
					(unsigned long long)size, (unsigned)geteuid(),
					(unsigned long long)q.uid_in_use, (unsigned long long)q.uid_quota);
		if (err == EINVAL)
			return npi_fail(NPUSHM_ERR_INVALID, err,
					"the module refused a region of %llu bytes (pool capacity %llu)",
					(unsigned long long)size, (unsigned long long)q.capacity);
		return npi_fail(npi_status_from_errno(err), err, "cannot allocate %llu bytes",
				(unsigned long long)size);
	}
	r->fd = a.fd;
	r->id = a.id;
	r->size = a.size;
	r->writable = true;
	return NPUSHM_OK;
}

static npushm_status_t kmod_region_open(npushm_dev_t *dev, const char *name, uint32_t flags,
					npushm_region_t *r)
{
	struct npushm_open o = {
		.name = (uintptr_t)name,
		.flags = (flags & NPUSHM_OPEN_WRITE) ? NPUSHM_OPEN_RDWR : 0,
	};

	if (ioctl(dev->fd, NPUSHM_IOC_OPEN, &o)) {
		int err = errno;

		if (err == ENOENT)
			return npi_fail(NPUSHM_ERR_NOT_FOUND, err, "no region is published as '%s'", name);
		if (err == EACCES || err == EPERM)
			return npi_fail(NPUSHM_ERR_ACCESS, err,
					"the mode of '%s' does not let uid %u open it %s", name,
					(unsigned)geteuid(),
					(flags & NPUSHM_OPEN_WRITE) ? "read-write" : "read-only");
		if (err == ENAMETOOLONG || err == EINVAL)
			return npi_fail(NPUSHM_ERR_NAME, err, "the module rejected the name '%s'", name);
		return npi_fail(npi_status_from_errno(err), err, "cannot open region '%s'", name);
	}
	r->fd = o.fd;
	r->id = o.id;
	r->size = o.size;
	r->writable = flags & NPUSHM_OPEN_WRITE;
	return NPUSHM_OK;
}

static npushm_status_t kmod_region_import(npushm_dev_t *dev, npushm_region_t *r)
{
	struct npushm_region_info ri;
	npushm_status_t st = kmod_info_raw(r->fd, &ri);

	(void)dev;
	if (st)
		return st;
	r->id = ri.id;
	r->size = ri.size;
	r->writable = ri.flags & NPUSHM_INFO_WRITABLE;
	return NPUSHM_OK;
}

static npushm_status_t kmod_name_unlink(npushm_dev_t *dev, const char *name)
{
	struct npushm_unlink u = { .name = (uintptr_t)name };

	if (ioctl(dev->fd, NPUSHM_IOC_UNLINK, &u)) {
		int err = errno;

		if (err == ENOENT)
			return npi_fail(NPUSHM_ERR_NOT_FOUND, err, "no region is published as '%s'", name);
		if (err == EACCES || err == EPERM)
			return npi_fail(NPUSHM_ERR_ACCESS, err,
					"only the owner of '%s' or a process with CAP_IPC_OWNER may remove it",
					name);
		return npi_fail(npi_status_from_errno(err), err, "cannot remove the name '%s'", name);
	}
	return NPUSHM_OK;
}

static npushm_status_t kmod_region_publish(npushm_region_t *r, const char *name, uint32_t mode,
					   uint32_t flags)
{
	struct npushm_publish p = {
		.name = (uintptr_t)name,
		.mode = mode,
		.flags = (flags & NPUSHM_PUBLISH_PERSISTENT) ? NPUSHM_PUBLISH_PERSIST : 0,
	};

	if (ioctl(r->fd, NPUSHM_IOC_PUBLISH, &p)) {
		int err = errno;

		if (err == EEXIST)
			return npi_fail(NPUSHM_ERR_EXISTS, err,
					"the name '%s' is already published; choose another name or remove it first",
					name);
		if (err == EACCES || err == EPERM || err == EBADF)
			return npi_fail(NPUSHM_ERR_ACCESS, err,
					"publishing region %llu as '%s' needs a read-write handle unless the region is sealed",
					(unsigned long long)r->id, name);
		return npi_fail(npi_status_from_errno(err), err, "cannot publish region %llu as '%s'",
				(unsigned long long)r->id, name);
	}
	return NPUSHM_OK;
}

static npushm_status_t kmod_region_seal(npushm_region_t *r)
{
	struct npushm_seal s = { .seals = NPUSHM_SEAL_WRITE };

	if (ioctl(r->fd, NPUSHM_IOC_SEAL, &s)) {
		int err = errno;

		if (err == EBUSY)
			return npi_fail(NPUSHM_ERR_BUSY, err,
					"cannot seal region %llu while a writable mapping or export of it exists; unmap it first",
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

static npushm_status_t kmod_region_sealed(npushm_region_t *r, bool *sealed)
{
	struct npushm_region_info ri;
	npushm_status_t st = kmod_info_raw(r->fd, &ri);

	if (st)
		return st;
	*sealed = ri.flags & NPUSHM_INFO_SEALED;
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
		      ((ri.flags & NPUSHM_INFO_PERSISTENT) ? NPUSHM_REGION_PERSISTENT : 0) |
		      ((ri.flags & NPUSHM_INFO_NAMED) ? NPUSHM_REGION_NAMED : 0) |
		      ((ri.flags & NPUSHM_INFO_WRITABLE) ? NPUSHM_REGION_WRITABLE : 0);
	info->owner_uid = ri.owner_uid;
	info->owner_gid = ri.owner_gid;
	info->mode = ri.mode;
	info->handles = ri.handles;
	info->mappings = ri.mappings;
	info->dmabufs = ri.dmabufs;
	info->names = ri.names;
	info->mapped_bytes = ri.mapped_bytes;
	ri.name[NPUSHM_NAME_MAX] = '\0';
	memcpy(info->name, ri.name, sizeof(info->name));
	return NPUSHM_OK;
}

static npushm_status_t kmod_list_regions(npushm_dev_t *dev, struct npushm_region_list *list)
{
	(void)dev;
	return npi_kmod_netlink_list(list);
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
