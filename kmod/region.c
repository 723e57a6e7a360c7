// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * region.c - the device memory behind a region file: sizing, seals, pins,
 * read and write (region_file.c hands these to the files), and revoking the
 * regions of a provider whose device is going (npushm_provider_revoke).
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

/*
 * Zap every user mapping of a revoked provider's regions (no fault maps its
 * pages again: npushm_provider_mark_revoked() waited for them).
 */
static void npushm_regions_revoke(struct npushm_provider *provider)
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

/**
 * npushm_provider_revoke - the provider's device is going: stop every use
 *	of its memory by the CPU
 * @provider: a registered provider
 *
 * Sizing a region from it fails with -ENODEV from now on, and so do new
 * mappings and dma-buf exports of its regions; their user mappings are
 * zapped (a later touch is SIGBUS) and read(2) and write(2) fail with -EIO.
 * The regions themselves, their names, pins and exports stay until their
 * users let them go; the pages come back to @provider->free then, and
 * @provider->release runs after the last. Call it before unregistering.
 */
void npushm_provider_revoke(struct npushm_provider *provider)
{
	npushm_provider_mark_revoked(provider);
	npushm_regions_revoke(provider);
}
EXPORT_SYMBOL_GPL(npushm_provider_revoke);

static int region_alloc_chunks(struct npushm_region *region, u64 size)
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
		return region_alloc_chunks(region, new);
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

/**
 * npushm_region_seal_write - NPUSHM_SEAL_WRITE: no write to the region from
 *	now on
 * @region: the region
 *
 * Waits a while for transient pins to go (as memfd's F_SEAL_WRITE).
 *
 * Return: 0 (also when already sealed), -EBUSY while a writable mapping,
 * a writable dma-buf or a pin exists, -EINTR when killed.
 */
int npushm_region_seal_write(struct npushm_region *region)
{
	struct inode *inode = region->inode;
	bool sealed_now = false;
	unsigned int scan;
	int ret;

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
