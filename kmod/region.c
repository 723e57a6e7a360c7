// SPDX-License-Identifier: GPL-2.0
/*
 * region.c - region objects, their handles and the ioctls on a handle.
 *
 * A region is created by NPUSHM_IOC_ALLOC: the pool is charged first, then
 * the provider fills the page array, then the region gets an id and an
 * inode in npushm's pseudo filesystem. Handles are files on that inode,
 * read-write or read-only; each holds a reference. Internal handles (held
 * by dma-buf exports for their mappings) are not counted as user handles.
 * The last reference destroys the region: names go, pages go back to the
 * provider, the pool is uncharged.
 */
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/nsproxy.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>
#include <linux/xarray.h>
#include <net/net_namespace.h>

#include "npushm_internal.h"

#define NPUSHM_FS_MAGIC	0x6e707368	/* "npsh" */

DEFINE_XARRAY(npushm_regions);
static atomic64_t npushm_next_id = ATOMIC64_INIT(0);
static struct vfsmount *npushm_mnt;

static const struct file_operations npushm_region_fops;
static const struct file_operations npushm_region_internal_fops;

/**
 * npushm_region_get - take a reference on a region the caller holds one of
 * @region: the region
 */
void npushm_region_get(struct npushm_region *region)
{
	kref_get(&region->ref);
}

/**
 * npushm_region_tryget - take a reference unless the region is dying
 * @region: the region, found through a name or the id table
 *
 * Return: true if a reference was taken.
 */
bool npushm_region_tryget(struct npushm_region *region)
{
	return kref_get_unless_zero(&region->ref);
}

static void npushm_region_destroy(struct kref *ref)
{
	struct npushm_region *region = container_of(ref, struct npushm_region, ref);

	WARN_ON(region->nr_vmas || region->handles || region->dmabufs);
	npushm_names_drop_region(region);
	xa_erase(&npushm_regions, region->id);
	npushm_event(NPUSHM_EVENT_DESTROYED, region, NULL, region->size, 0);
	region->provider->free(region);
	kvfree(region->pages);
	npushm_pool_uncharge(region->owner, region->size);
	iput(region->inode);
	npushm_ns_put(region->ns);
	put_net(region->net);
	kfree_rcu(region, rcu);
}

/**
 * npushm_region_put - drop a reference; the last one destroys the region
 * @region: the region
 */
void npushm_region_put(struct npushm_region *region)
{
	kref_put(&region->ref, npushm_region_destroy);
}

/**
 * npushm_region_create - allocate a region from the pool
 * @size: bytes wanted, 0 < @size <= capacity
 * @out: the new region, holding one reference
 *
 * Return: 0, -ENOMEM or -EDQUOT when the pool or the caller's quota lacks
 * room, -EINTR when killed while allocating.
 */
int npushm_region_create(u64 size, struct npushm_region **out)
{
	struct npushm_region *region;
	kuid_t uid = current_euid();
	struct npushm_ns *ns;
	struct inode *inode;
	int ret;

	size = PAGE_ALIGN(size);
	ret = npushm_pool_charge(uid, size);
	if (ret)
		goto out_fail;

	region = kzalloc(sizeof(*region), GFP_KERNEL_ACCOUNT);
	if (!region) {
		ret = -ENOMEM;
		goto out_uncharge;
	}
	kref_init(&region->ref);
	mutex_init(&region->lock);
	INIT_LIST_HEAD(&region->vmas);
	INIT_LIST_HEAD(&region->names);
	region->size = size;
	region->npages = size >> PAGE_SHIFT;
	region->owner = uid;
	region->group = current_egid();
	region->provider = &npushm_sysmem_provider;

	region->pages = kvcalloc(region->npages, sizeof(*region->pages),
				 GFP_KERNEL_ACCOUNT);
	if (!region->pages) {
		ret = -ENOMEM;
		goto out_free_region;
	}
	ret = region->provider->alloc(region);
	if (ret)
		goto out_free_array;

	ns = npushm_ns_get_current();
	if (IS_ERR(ns)) {
		ret = PTR_ERR(ns);
		goto out_free_pages;
	}
	region->ns = ns;

	inode = alloc_anon_inode(npushm_mnt->mnt_sb);
	if (IS_ERR(inode)) {
		ret = PTR_ERR(inode);
		goto out_put_ns;
	}
	region->id = atomic64_inc_return(&npushm_next_id);
	inode->i_ino = region->id;
	inode->i_size = size;
	region->inode = inode;

	ret = xa_insert(&npushm_regions, region->id, region, GFP_KERNEL);
	if (ret)
		goto out_iput;
	region->net = get_net(current->nsproxy->net_ns);

	npushm_event(NPUSHM_EVENT_CREATED, region, NULL, size, 0);
	*out = region;
	return 0;

out_iput:
	iput(inode);
out_put_ns:
	npushm_ns_put(ns);
out_free_pages:
	region->provider->free(region);
out_free_array:
	kvfree(region->pages);
out_free_region:
	kfree(region);
out_uncharge:
	npushm_pool_uncharge(uid, size);
out_fail:
	npushm_pool_count_failure();
	npushm_event(NPUSHM_EVENT_ALLOC_FAILED, NULL, NULL, size, ret);
	return ret;
}

/**
 * npushm_region_file - open a new handle on a region
 * @region: the region (the caller holds a reference)
 * @writable: a read-write handle, else read-only
 * @internal: a handle for the module's own use (dma-buf mappings), not
 *	counted as a user handle
 *
 * Return: the file, holding its own reference on @region, or an ERR_PTR.
 */
struct file *npushm_region_file(struct npushm_region *region, bool writable,
				bool internal)
{
	const struct file_operations *fops = internal ?
		&npushm_region_internal_fops : &npushm_region_fops;
	char name[32];
	struct file *file;

	/* __fput() drops a module reference for f_op; take it here. */
	if (!try_module_get(fops->owner))
		return ERR_PTR(-ENODEV);
	snprintf(name, sizeof(name), "npushm:%llu", region->id);
	ihold(region->inode);
	file = alloc_file_pseudo(region->inode, npushm_mnt, name,
				 writable ? O_RDWR : O_RDONLY, fops);
	if (IS_ERR(file)) {
		iput(region->inode);
		module_put(fops->owner);
		return file;
	}
	file->private_data = region;
	npushm_region_get(region);
	if (!internal) {
		mutex_lock(&region->lock);
		region->handles++;
		mutex_unlock(&region->lock);
	}
	return file;
}

/**
 * npushm_region_handle_out - a new user handle, to be installed by dispatch
 * @region: the region (the caller holds a reference)
 * @writable: a read-write handle, else read-only
 * @out: receives the file and its reserved descriptor
 *
 * Return: the reserved descriptor number, or -errno.
 */
int npushm_region_handle_out(struct npushm_region *region, bool writable,
			     struct npushm_ioctl_out *out)
{
	struct file *handle;
	int fd;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;
	handle = npushm_region_file(region, writable, false);
	if (IS_ERR(handle)) {
		put_unused_fd(fd);
		return PTR_ERR(handle);
	}
	out->file = handle;
	out->fd = fd;
	return fd;
}

/**
 * npushm_region_from_file - the region behind a handle
 * @file: any file
 *
 * Return: the region, or NULL when @file is not an npushm region handle.
 */
struct npushm_region *npushm_region_from_file(struct file *file)
{
	if (file->f_op != &npushm_region_fops &&
	    file->f_op != &npushm_region_internal_fops)
		return NULL;
	return file->private_data;
}

/**
 * npushm_file_writable - whether a handle was opened read-write
 * @file: a region handle
 *
 * Return: true for a read-write handle.
 */
bool npushm_file_writable(struct file *file)
{
	return file->f_mode & FMODE_WRITE;
}

static int npushm_region_release(struct inode *inode, struct file *file)
{
	struct npushm_region *region = file->private_data;

	mutex_lock(&region->lock);
	region->handles--;
	mutex_unlock(&region->lock);
	npushm_region_put(region);
	return 0;
}

static int npushm_region_internal_release(struct inode *inode,
					  struct file *file)
{
	npushm_region_put(file->private_data);
	return 0;
}

static int npushm_region_file_mmap(struct file *file,
				   struct vm_area_struct *vma)
{
	return npushm_region_mmap(file->private_data, vma);
}

/**
 * npushm_region_ioctl_alloc - NPUSHM_IOC_ALLOC
 * @file: /dev/npushm
 * @arg: struct npushm_alloc
 * @out: the new handle to install
 *
 * Return: 0 or -errno.
 */
int npushm_region_ioctl_alloc(struct file *file, void *arg,
			      struct npushm_ioctl_out *out)
{
	struct npushm_alloc *req = arg;
	struct npushm_region *region;
	int ret;

	if (req->flags)
		return -EINVAL;
	if (!req->size || req->size > npushm_pool_capacity())
		return -EINVAL;

	ret = npushm_region_create(req->size, &region);
	if (ret)
		return ret;
	ret = npushm_region_handle_out(region, true, out);
	if (ret >= 0) {
		req->size = region->size;
		req->id = region->id;
		req->fd = ret;
		ret = 0;
	}
	npushm_region_put(region);
	return ret;
}

static int npushm_region_ioctl_publish(struct file *file, void *arg,
				       struct npushm_ioctl_out *out)
{
	return npushm_names_publish(file->private_data,
				    npushm_file_writable(file), arg);
}

static int npushm_region_ioctl_seal(struct file *file, void *arg,
				    struct npushm_ioctl_out *out)
{
	struct npushm_region *region = file->private_data;
	struct npushm_seal *req = arg;
	bool sealed_now = false;
	int ret = 0;

	if (!req->seals || (req->seals & ~NPUSHM_SEAL_WRITE) || req->reserved)
		return -EINVAL;
	if (!npushm_file_writable(file))
		return -EPERM;

	mutex_lock(&region->lock);
	if (!region->sealed) {
		if (region->writers) {
			ret = -EBUSY;
		} else {
			region->sealed = true;
			sealed_now = true;
		}
	}
	mutex_unlock(&region->lock);
	if (sealed_now)
		npushm_event(NPUSHM_EVENT_SEALED, region, NULL, region->size, 0);
	return ret;
}

static int npushm_region_ioctl_export(struct file *file, void *arg,
				      struct npushm_ioctl_out *out)
{
	return npushm_dmabuf_export(file, file->private_data, arg, out);
}

static int npushm_region_ioctl_info(struct file *file, void *arg,
				    struct npushm_ioctl_out *out)
{
	struct npushm_region *region = file->private_data;
	struct user_namespace *userns = current_user_ns();
	struct npushm_region_info *info = arg;
	struct npushm_name *name;
	unsigned int mappers;

	info->id = region->id;
	info->size = region->size;
	info->owner_uid = from_kuid_munged(userns, region->owner);
	info->owner_gid = from_kgid_munged(userns, region->group);
	if (npushm_file_writable(file))
		info->flags |= NPUSHM_INFO_WRITABLE;

	mutex_lock(&npushm_names_lock);
	name = list_first_entry_or_null(&region->names, struct npushm_name, link);
	if (name) {
		info->flags |= NPUSHM_INFO_NAMED;
		info->mode = name->mode;
		strscpy(info->name, name->str, sizeof(info->name));
	}
	if (region->nr_persistent)
		info->flags |= NPUSHM_INFO_PERSISTENT;
	info->names = region->nr_names;

	mutex_lock(&region->lock);
	if (region->sealed)
		info->flags |= NPUSHM_INFO_SEALED;
	info->handles = region->handles;
	info->mappings = region->nr_vmas;
	info->dmabufs = region->dmabufs;
	npushm_region_map_stats(region, &info->mapped_bytes, &mappers);
	mutex_unlock(&region->lock);
	mutex_unlock(&npushm_names_lock);
	return 0;
}

static const struct npushm_ioctl_desc npushm_region_ioctls[] = {
	{ NPUSHM_IOC_PUBLISH, NPUSHM_PUBLISH_SIZE_VER0, npushm_region_ioctl_publish },
	{ NPUSHM_IOC_SEAL, NPUSHM_SEAL_SIZE_VER0, npushm_region_ioctl_seal },
	{ NPUSHM_IOC_EXPORT_DMABUF, NPUSHM_EXPORT_SIZE_VER0, npushm_region_ioctl_export },
	{ NPUSHM_IOC_INFO, NPUSHM_INFO_SIZE_VER0, npushm_region_ioctl_info },
};

static long npushm_region_ioctl(struct file *file, unsigned int cmd,
				unsigned long arg)
{
	return npushm_ioctl_dispatch(npushm_region_ioctls,
				     ARRAY_SIZE(npushm_region_ioctls),
				     file, cmd, arg);
}

static const struct file_operations npushm_region_fops = {
	.owner = THIS_MODULE,
	.release = npushm_region_release,
	.mmap = npushm_region_file_mmap,
	.unlocked_ioctl = npushm_region_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static const struct file_operations npushm_region_internal_fops = {
	.owner = THIS_MODULE,
	.release = npushm_region_internal_release,
	.mmap = npushm_region_file_mmap,
	.unlocked_ioctl = npushm_region_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static int npushm_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, NPUSHM_FS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type npushm_fs_type = {
	.name = "npushm",
	.init_fs_context = npushm_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

/**
 * npushm_region_fs_init - mount the pseudo filesystem region inodes live on
 *
 * Return: 0 or -errno.
 */
int npushm_region_fs_init(void)
{
	npushm_mnt = kern_mount(&npushm_fs_type);
	return PTR_ERR_OR_ZERO(npushm_mnt);
}

/**
 * npushm_region_fs_exit - unmount it; every region is gone by now
 */
void npushm_region_fs_exit(void)
{
	WARN_ON(!xa_empty(&npushm_regions));
	kern_unmount(npushm_mnt);
}
