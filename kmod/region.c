// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * region.c - the device memory behind a region file: sizing, seals, pins,
 * read and write, and the ioctls on region files.
 *
 * Size rules (all under the inode lock; sizes round up to PAGE_SIZE):
 *   0 -> N   reserves N bytes from the instance and the pool, charged to the
 *            file's owner, and allocates the pages (ftruncate, or fallocate
 *            of [0, N) with mode 0);
 *   N -> N   nothing (fallocate inside [0, N) too);
 *   N -> 0   gives the memory back, only while nothing maps, exports or pins
 *            the region (else EBUSY);
 *   N -> M   refused (EINVAL): the size is set once;
 *   sealed   any change is refused (EPERM).
 *
 * Sealing (NPUSHM_SEAL_WRITE) follows memfd's F_SEAL_WRITE: it fails with
 * EBUSY while a mapping that is or may become writable or a writable dma-buf
 * exists, or while any page has a reference other than the region's own and
 * its mappings' (a GUP pin: an RDMA MR, io_uring buffers, O_DIRECT in
 * flight). Transient references get about 75 ms to go, as in memfd. Every
 * pin, FOLL_PIN (RDMA, io_uring, vfio) or FOLL_GET (O_DIRECT in flight on
 * 6.1, vmsplice), is seen through the reference count; the module does not
 * call page_maybe_dma_pinned() (a static key: see docs/kmod.md).
 *
 * read(2) takes no inode lock: a reader copying into memory whose fault
 * never completes (userfaultfd, FUSE) must not hold up SEAL, ftruncate,
 * fallocate or write(2). It counts itself in @readers, which keeps the
 * pages (going back to size 0 waits for readers as for transient pins, then
 * fails with EBUSY). Writes hold the inode lock, which SEAL takes to exclude
 * them; IOCB_NOWAIT writes do not wait for it (EAGAIN).
 */
#include <linux/cred.h>
#include <linux/device.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/fsnotify.h>
#include <linux/kdev_t.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/xarray.h>

#include "npushm_internal.h"

/* Scans for pins before sealing or shrinking gives up: about 75 ms. */
#define NPUSHM_PIN_SCANS	3

/* Protects lookups in npushm_regions against regions being destroyed. */
DEFINE_MUTEX(npushm_regions_lock);
DEFINE_XARRAY(npushm_regions);

/**
 * npushm_region_init - set up the region of a new regular-file inode
 * @region: the region (the inode's private data), zeroed with its lock and
 *	list initialised
 * @inode: the inode; its i_ino, from npushm_id_next(), is the region's id
 *
 * Return: 0 or -ENOMEM.
 */
int npushm_region_init(struct npushm_region *region, struct inode *inode)
{
	int ret;

	region->inode = inode;
	region->account = npushm_account_uid(inode->i_uid);
	region->provider = ((struct npushm_sb *)inode->i_sb->s_fs_info)->provider;
	region->id = inode->i_ino;
	region->index = npushm_id_to_index(region->id);
	mutex_lock(&npushm_regions_lock);
	ret = xa_insert(&npushm_regions, region->index, region, GFP_KERNEL);
	mutex_unlock(&npushm_regions_lock);
	return ret;
}

/**
 * npushm_region_pinned_pages - pages with a reference besides ours and PTEs'
 * @region: the region, its lock held
 *
 * Return: the number of such pages (GUP pins and transient references).
 */
unsigned long npushm_region_pinned_pages(struct npushm_region *region)
{
	unsigned long i, n = 0;

	lockdep_assert_held(&region->lock);
	for (i = 0; i < region->npages; i++) {
		struct page *page = region->pages[i];

		if (page_ref_count(page) - page_mapcount(page) != 1)
			n++;
		if (!(i % 4096))
			cond_resched();
	}
	return n;
}

/*
 * Give back @pages of a region charged to @uid; pinned ones become orphans
 * (the pool keeps the array for them).
 */
static void npushm_region_free_pages(struct npushm_region *region,
				     struct page **pages, unsigned long npages,
				     kuid_t uid)
{
	unsigned long i, pinned = 0;

	for (i = 0; i < npages; i++) {
		if (page_ref_count(pages[i]) != 1) {
			swap(pages[i], pages[pinned]);
			pinned++;
		}
	}
	npushm_provider_free(region->provider, pages + pinned, npages - pinned);
	npushm_pool_orphan(uid, (u64)npages << PAGE_SHIFT, pages, pinned,
			   region->provider);
	npushm_sb_release_bytes(region->inode->i_sb, (u64)npages << PAGE_SHIFT);
	if (!pinned)
		kvfree(pages);
}

/**
 * npushm_region_destroy - free a region whose inode is being evicted
 * @region: the region; no file, mapping or dma-buf refers to it any more
 */
void npushm_region_destroy(struct npushm_region *region)
{
	mutex_lock(&npushm_regions_lock);
	xa_erase(&npushm_regions, region->index);
	mutex_unlock(&npushm_regions_lock);
	WARN_ON(region->nr_vmas || region->handles || region->dmabufs);
	if (region->size)
		npushm_region_free_pages(region, region->pages, region->npages,
					 region->charged);
	region->pages = NULL;
	region->size = 0;
	region->npages = 0;
}

/* The next region of @provider from *@index on, its inode held, or NULL. */
static struct inode *npushm_regions_next_of(struct npushm_provider *provider,
					    unsigned long *index)
{
	struct npushm_region *region;
	struct inode *inode = NULL;

	mutex_lock(&npushm_regions_lock);
	xa_for_each_start(&npushm_regions, *index, region, *index) {
		if (region->provider != provider)
			continue;
		/* NULL for an inode being evicted: it maps nothing any more. */
		inode = igrab(region->inode);
		if (inode)
			break;
	}
	mutex_unlock(&npushm_regions_lock);
	return inode;
}

/**
 * npushm_regions_revoke - zap every user mapping of a revoked provider's
 *	regions
 * @provider: revoked (npushm_provider_revoke()), so that no fault maps its
 *	pages again
 */
void npushm_regions_revoke(struct npushm_provider *provider)
{
	unsigned long index = 0;
	struct inode *inode;

	while ((inode = npushm_regions_next_of(provider, &index))) {
		unmap_mapping_range(inode->i_mapping, 0, 0, 1);
		iput(inode);
		index++;
		cond_resched();
	}
}

static int npushm_region_alloc(struct npushm_region *region, u64 size)
{
	struct inode *inode = region->inode;
	unsigned long npages = size >> PAGE_SHIFT;
	kuid_t uid = region->account;
	struct page **pages;
	int ret;

	ret = npushm_sb_reserve_bytes(inode->i_sb, size);
	if (ret)
		goto out_fail;
	ret = npushm_pool_charge(uid, size);
	if (ret)
		goto out_release;
	/* No warning for absurd sizes: the caller gets ENOMEM. */
	pages = kvcalloc(npages, sizeof(*pages),
			 GFP_KERNEL_ACCOUNT | __GFP_NOWARN | __GFP_RETRY_MAYFAIL);
	if (!pages) {
		ret = -ENOMEM;
		goto out_uncharge;
	}
	ret = npushm_provider_alloc(region->provider, pages, npages);
	if (ret)
		goto out_free_array;

	mutex_lock(&region->lock);
	region->pages = pages;
	region->npages = npages;
	region->size = size;
	region->charged = uid;
	mutex_unlock(&region->lock);
	i_size_write(inode, size);
	inode->i_blocks = size >> 9;
	return 0;

out_free_array:
	kvfree(pages);
out_uncharge:
	npushm_pool_uncharge(uid, size);
out_release:
	npushm_sb_release_bytes(inode->i_sb, size);
out_fail:
	npushm_pool_count_failure();
	return ret;
}

/*
 * Wait a while for transient references (pins, reads in flight) to go,
 * region->lock held (dropped while waiting): -EBUSY after NPUSHM_PIN_SCANS,
 * -EINTR when killed, else -EAGAIN. The caller checks its conditions again.
 */
static int npushm_region_wait(struct npushm_region *region, unsigned int scan)
{
	if (scan >= NPUSHM_PIN_SCANS)
		return -EBUSY;
	mutex_unlock(&region->lock);
	schedule_timeout_killable((HZ << scan) / 200);
	mutex_lock(&region->lock);
	return fatal_signal_pending(current) ? -EINTR : -EAGAIN;
}

/* 0 when no page is pinned, else as npushm_region_wait(). */
static int npushm_region_wait_unpinned(struct npushm_region *region,
				       unsigned int scan)
{
	if (!npushm_region_pinned_pages(region))
		return 0;
	return npushm_region_wait(region, scan);
}

static int npushm_region_release(struct npushm_region *region)
{
	struct inode *inode = region->inode;
	unsigned long npages;
	struct page **pages;
	unsigned int scan;
	kuid_t uid;
	int ret;

	mutex_lock(&region->lock);
	for (scan = 0;; scan++) {
		if (region->nr_vmas || region->dmabufs) {
			ret = -EBUSY;
			break;
		}
		if (region->readers)
			ret = npushm_region_wait(region, scan);
		else
			ret = npushm_region_wait_unpinned(region, scan);
		if (ret != -EAGAIN)
			break;
	}
	if (ret) {
		mutex_unlock(&region->lock);
		return ret;
	}
	pages = region->pages;
	npages = region->npages;
	uid = region->charged;
	region->pages = NULL;
	region->npages = 0;
	region->size = 0;
	mutex_unlock(&region->lock);

	i_size_write(inode, 0);
	inode->i_blocks = 0;
	npushm_region_free_pages(region, pages, npages, uid);
	return 0;
}

/**
 * npushm_region_resize - change a region's size (see the rules above)
 * @region: the region; its inode is locked
 * @size: the new size in bytes
 *
 * Return: 0, -EPERM when sealed, -EINVAL for a change between two non-zero
 * sizes, -EBUSY when shrinking to 0 while mapped, exported or pinned,
 * -ENOSPC (instance or pool full), -EDQUOT, -ENOMEM, -EINTR.
 */
int npushm_region_resize(struct npushm_region *region, loff_t size)
{
	u64 new;

	if (size < 0)
		return -EINVAL;
	new = PAGE_ALIGN((u64)size);
	if (new == region->size)
		return 0;
	if (region->sealed)
		return -EPERM;
	if (!region->size)
		return npushm_region_alloc(region, new);
	if (!new)
		return npushm_region_release(region);
	return -EINVAL;
}

/**
 * npushm_region_fallocate - fallocate(2) with mode 0
 * @region: the region; its inode is locked
 * @offset: start of the range
 * @len: length of the range
 *
 * Sizes an unsized region to [0, @offset + @len) when @offset is 0; a range
 * inside a sized region is already allocated.
 *
 * Return: 0 or -errno as npushm_region_resize().
 */
int npushm_region_fallocate(struct npushm_region *region, loff_t offset,
			    loff_t len)
{
	loff_t end;

	if (offset < 0 || len <= 0 || check_add_overflow(offset, len, &end))
		return -EINVAL;
	if (region->size && end <= region->size)
		return 0;
	if (region->sealed)
		return -EPERM;
	if (region->size || offset)
		return -EINVAL;
	return npushm_region_resize(region, end);
}

/**
 * npushm_region_chown - move the region's charge to a new owner
 * @region: the region; its inode is locked
 * @uid: the new owner; the charge goes to npushm_account_uid() of it (the
 *	chowner's user namespace creator when done inside a user namespace)
 *
 * Return: 0, -EDQUOT when the new owner has no room for it, -ENOMEM.
 */
int npushm_region_chown(struct npushm_region *region, kuid_t uid)
{
	kuid_t account = npushm_account_uid(uid);
	int ret = 0;

	mutex_lock(&region->lock);
	if (region->size) {
		ret = npushm_pool_transfer(region->charged, account,
					   region->size);
		if (!ret)
			region->charged = account;
	}
	if (!ret)
		region->account = account;
	mutex_unlock(&region->lock);
	return ret;
}

/**
 * npushm_region_open_file - count a user-visible open file of the region
 * @region: the region
 */
void npushm_region_open_file(struct npushm_region *region)
{
	mutex_lock(&region->lock);
	region->handles++;
	mutex_unlock(&region->lock);
}

/**
 * npushm_region_release_file - undo npushm_region_open_file()
 * @region: the region
 */
void npushm_region_release_file(struct npushm_region *region)
{
	mutex_lock(&region->lock);
	region->handles--;
	mutex_unlock(&region->lock);
}

/**
 * npushm_file_writable - whether a region file was opened read-write
 * @file: a region file
 *
 * Return: true for a read-write file.
 */
bool npushm_file_writable(struct file *file)
{
	return file->f_mode & FMODE_WRITE;
}

/**
 * npushm_region_read_iter - read(2) of a region file
 * @iocb: the request
 * @to: the destination
 *
 * Return: bytes read, 0 at the end of the region, -EFAULT, -EIO when the
 * region's device went (npushm_provider_revoke()).
 */
ssize_t npushm_region_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	struct npushm_region *region = npushm_region(inode);
	loff_t pos = iocb->ki_pos;
	ssize_t done = 0;
	struct page **pages;
	size_t size;

	if (npushm_provider_revoked(region->provider))
		return -EIO;
	mutex_lock(&region->lock);
	size = region->size;
	pages = region->pages;
	if (size)
		region->readers++;
	mutex_unlock(&region->lock);
	if (!size)
		return 0;

	while (iov_iter_count(to) && pos >= 0 && pos < size) {
		size_t off = offset_in_page(pos);
		size_t len = min3((size_t)(PAGE_SIZE - off),
				  (size_t)(size - pos), iov_iter_count(to));
		size_t n = copy_page_to_iter(pages[pos >> PAGE_SHIFT], off, len, to);

		done += n;
		pos += n;
		if (n < len) {
			if (!done)
				done = -EFAULT;
			break;
		}
		if (fatal_signal_pending(current))
			break;
		cond_resched();
	}

	mutex_lock(&region->lock);
	region->readers--;
	mutex_unlock(&region->lock);
	iocb->ki_pos = pos;
	return done;
}

/**
 * npushm_region_write_iter - write(2) of a region file
 * @iocb: the request
 * @from: the source
 *
 * Writes land inside the region only: the size is set with ftruncate().
 *
 * Return: bytes written, -EPERM when sealed, -EFBIG at or past the end,
 * -EFAULT, -EIO when the region's device went.
 */
ssize_t npushm_region_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	struct npushm_region *region = npushm_region(inode);
	ssize_t done = 0, ret;
	loff_t pos;

	if (iocb->ki_flags & IOCB_NOWAIT) {
		if (!inode_trylock(inode))
			return -EAGAIN;
	} else {
		inode_lock(inode);
	}
	ret = generic_write_checks(iocb, from);
	if (ret <= 0)
		goto out_unlock;
	if (region->sealed) {
		ret = -EPERM;
		goto out_unlock;
	}
	if (npushm_provider_revoked(region->provider)) {
		ret = -EIO;
		goto out_unlock;
	}
	pos = iocb->ki_pos;
	if (pos >= region->size) {
		ret = -EFBIG;
		goto out_unlock;
	}
	while (iov_iter_count(from) && pos < region->size) {
		size_t off = offset_in_page(pos);
		size_t len = min3((size_t)(PAGE_SIZE - off),
				  (size_t)(region->size - pos),
				  iov_iter_count(from));
		size_t n = copy_page_from_iter(region->pages[pos >> PAGE_SHIFT],
					       off, len, from);

		done += n;
		pos += n;
		if (n < len || fatal_signal_pending(current))
			break;
		cond_resched();
	}
	ret = done ? done : -EFAULT;
	if (done) {
		iocb->ki_pos = pos;
		inode->i_mtime = current_time(inode);
		inode->i_ctime = inode->i_mtime;
	}
out_unlock:
	inode_unlock(inode);
	return ret;
}

static int npushm_region_ioctl_seal(struct file *file, void *arg,
				    struct npushm_ioctl_out *out)
{
	struct npushm_region *region = npushm_region_from_file(file);
	struct inode *inode = file_inode(file);
	struct npushm_seal *req = arg;
	bool sealed_now = false;
	unsigned int scan;
	int ret;

	if (!req->seals || (req->seals & ~NPUSHM_SEAL_WRITE) || req->reserved)
		return -EINVAL;
	if (!npushm_file_writable(file))
		return -EPERM;

	inode_lock(inode);
	mutex_lock(&region->lock);
	for (scan = 0;; scan++) {
		if (region->sealed) {
			ret = 0;
			break;
		}
		if (region->writers) {
			ret = -EBUSY;
			break;
		}
		ret = npushm_region_wait_unpinned(region, scan);
		if (ret == -EAGAIN)
			continue;
		if (!ret) {
			region->sealed = true;
			sealed_now = true;
		}
		break;
	}
	mutex_unlock(&region->lock);
	inode_unlock(inode);
	if (sealed_now)
		fsnotify_inode(inode, FS_ATTRIB);
	return ret;
}

static int npushm_region_ioctl_export(struct file *file, void *arg,
				      struct npushm_ioctl_out *out)
{
	return npushm_dmabuf_export(file, npushm_region_from_file(file), arg, out);
}

/*
 * The name @file was opened by, if that link still exists: in the same
 * directory under the same name (struct npushm_opened_as).
 */
static void npushm_region_file_name(struct file *file, char *buf, size_t size)
{
	const struct npushm_opened_as *as = file->private_data;
	struct dentry *dentry = file->f_path.dentry;
	struct name_snapshot name;
	bool same;

	buf[0] = '\0';
	if (!as || d_unhashed(dentry) || IS_ROOT(dentry))
		return;
	take_dentry_name_snapshot(&name, dentry);
	spin_lock(&dentry->d_lock);
	same = dentry->d_parent == as->parent && !d_unhashed(dentry) &&
	       dentry->d_name.hash_len == as->hash_len &&
	       name.name.hash_len == as->hash_len;
	spin_unlock(&dentry->d_lock);
	if (same)
		strscpy(buf, name.name.name, size);
	release_dentry_name_snapshot(&name);
}

static int npushm_region_ioctl_info(struct file *file, void *arg,
				    struct npushm_ioctl_out *out)
{
	struct npushm_region *region = npushm_region_from_file(file);
	struct user_namespace *userns = current_user_ns();
	struct inode *inode = file_inode(file);
	struct npushm_region_info *info = arg;

	info->id = region->id;
	info->owner_uid = from_kuid_munged(userns, inode->i_uid);
	info->owner_gid = from_kgid_munged(userns, inode->i_gid);
	info->mode = inode->i_mode & 07777;
	info->names = inode->i_nlink;
	info->dev = new_encode_dev(inode->i_sb->s_dev);
	if (npushm_file_writable(file))
		info->flags |= NPUSHM_INFO_WRITABLE;
	if (inode->i_nlink)
		info->flags |= NPUSHM_INFO_NAMED;
	if (npushm_provider_revoked(region->provider))
		info->flags |= NPUSHM_INFO_REVOKED;
	npushm_region_file_name(file, info->name, sizeof(info->name));
	strscpy(info->provider, region->provider->name, sizeof(info->provider));
	if (region->provider->dev)
		strscpy(info->device, dev_name(region->provider->dev),
			sizeof(info->device));

	mutex_lock(&region->lock);
	info->size = region->size;
	if (region->sealed)
		info->flags |= NPUSHM_INFO_SEALED;
	if (region->anonymous)
		info->flags |= NPUSHM_INFO_ANONYMOUS;
	info->charged_uid = region->size ?
			    from_kuid_munged(userns, region->charged) : (u32)-1;
	info->handles = region->handles;
	info->mappings = region->nr_vmas;
	info->dmabufs = region->dmabufs;
	info->pinned_bytes = (u64)npushm_region_pinned_pages(region) << PAGE_SHIFT;
	npushm_region_map_stats(region, &info->mapped_bytes, &info->mappers);
	mutex_unlock(&region->lock);
	return 0;
}

static const struct npushm_ioctl_desc npushm_region_ioctls[] = {
	{ NPUSHM_IOC_SEAL, NPUSHM_SEAL_SIZE_VER0, npushm_region_ioctl_seal },
	{ NPUSHM_IOC_EXPORT_DMABUF, NPUSHM_EXPORT_SIZE_VER0, npushm_region_ioctl_export },
	{ NPUSHM_IOC_INFO, NPUSHM_INFO_SIZE_VER0, npushm_region_ioctl_info },
};

/**
 * npushm_region_ioctl - the ioctls of a region file
 * @file: the file
 * @cmd: the ioctl number
 * @arg: the caller's struct
 *
 * Return: 0 or -errno.
 */
long npushm_region_ioctl(struct file *file, unsigned int cmd,
			 unsigned long arg)
{
	return npushm_ioctl_dispatch(npushm_region_ioctls,
				     ARRAY_SIZE(npushm_region_ioctls),
				     file, cmd, arg);
}
