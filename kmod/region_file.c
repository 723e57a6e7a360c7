// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * region_file.c - the file operations of region files: open and release
 * (the handle count, the name the file was opened by), mmap, read, write,
 * fallocate and the ioctls (NPUSHM_IOC_SEAL, NPUSHM_IOC_EXPORT_DMABUF,
 * NPUSHM_IOC_INFO). fs.c gives these operations to the files it makes;
 * what they do to the region is region.c's, region_mmap.c's and dmabuf.c's.
 */
#include <linux/cred.h>
#include <linux/dcache.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/kdev_t.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uidgid.h>

#include "npushm_internal.h"

static int npushm_file_open(struct inode *inode, struct file *file)
{
	struct dentry *dentry = file->f_path.dentry;
	struct npushm_opened_as *as;

	as = kmalloc(sizeof(*as), GFP_KERNEL_ACCOUNT);
	if (!as)
		return -ENOMEM;
	as->parent = dget_parent(dentry);
	spin_lock(&dentry->d_lock);
	as->hash_len = dentry->d_name.hash_len;
	spin_unlock(&dentry->d_lock);
	file->private_data = as;
	npushm_region_open_file(npushm_region(inode));
	return 0;
}

static int npushm_file_release(struct inode *inode, struct file *file)
{
	struct npushm_opened_as *as = file->private_data;

	npushm_region_release_file(npushm_region(inode));
	if (as) {
		dput(as->parent);
		kfree(as);
	}
	return 0;
}

static int npushm_file_mmap(struct file *file, struct vm_area_struct *vma)
{
	return npushm_region_mmap(npushm_region(file_inode(file)), vma);
}

static long npushm_file_fallocate(struct file *file, int mode, loff_t offset,
				  loff_t len)
{
	struct inode *inode = file_inode(file);
	int ret;

	if (mode)
		return -EOPNOTSUPP;
	inode_lock(inode);
	ret = npushm_region_fallocate(npushm_region(inode), offset, len);
	inode_unlock(inode);
	return ret;
}

static int npushm_region_ioctl_seal(struct file *file, void *arg,
				    struct npushm_ioctl_out *out)
{
	struct npushm_seal *req = arg;

	if (!req->seals || (req->seals & ~NPUSHM_SEAL_WRITE) || req->reserved)
		return -EINVAL;
	if (!npushm_file_writable(file))
		return -EPERM;
	return npushm_region_seal_write(npushm_region(file_inode(file)));
}

static int npushm_region_ioctl_export(struct file *file, void *arg,
				      struct npushm_ioctl_out *out)
{
	return npushm_dmabuf_export(file, npushm_region(file_inode(file)), arg, out);
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
	struct npushm_region *region = npushm_region(file_inode(file));
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

/* the ioctls of a region file */
static long npushm_region_ioctl(struct file *file, unsigned int cmd,
				unsigned long arg)
{
	return npushm_ioctl_dispatch(npushm_region_ioctls,
				     ARRAY_SIZE(npushm_region_ioctls),
				     file, cmd, arg);
}

const struct file_operations npushm_file_fops = {
	.owner = THIS_MODULE,
	.open = npushm_file_open,
	.release = npushm_file_release,
	.mmap = npushm_file_mmap,
	.read_iter = npushm_region_read_iter,
	.write_iter = npushm_region_write_iter,
	.llseek = generic_file_llseek,
	.fsync = noop_fsync,
	.fallocate = npushm_file_fallocate,
	.unlocked_ioctl = npushm_region_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};
